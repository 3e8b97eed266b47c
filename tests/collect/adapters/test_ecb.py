from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.ecb import parse_rates
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from priceadvisor.service.stores import configured_store
from tests.localserver import local_settings, serving

DAILY = (recordings_dir() / "ecb" / "eurofxref-daily.xml").read_bytes()


def test_parses_the_daily_file() -> None:
    rates = {r.currency: r for r in parse_rates(DAILY)}
    assert rates["USD"].per_eur == 1.1585 and rates["USD"].day == dt.date(2026, 11, 20)
    assert len(rates) == 14


def test_history_file_with_several_days_and_double_quotes() -> None:
    doc = b"""<?xml version="1.0"?><gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01"
      xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref"><Cube>
      <Cube time="2026-11-20"><Cube currency="USD" rate="1.1585"/></Cube>
      <Cube time="2026-11-19"><Cube currency="USD" rate="1.1601"/></Cube>
      </Cube></gesmes:Envelope>"""
    assert [(r.day.day, r.per_eur) for r in parse_rates(doc)] == [(20, 1.1585), (19, 1.1601)]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (b"<html><body>Maintenance</body></html>", "no <Cube"),
        (DAILY[: len(DAILY) // 2], "not valid XML"),
        (DAILY.replace(b"rate='1.1585'", b"rate='n/a'"), "bad rate entry"),
        (DAILY.replace(b"time='2026-11-20'", b"time='20/11/2026'"), "bad rate entry"),
        (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>', "DOCTYPE"),
    ],
)
def test_bad_documents_are_format_errors(doc: bytes, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_rates(doc)


def test_rates_land_and_convert_eur_prices(db_path: Path) -> None:
    with serving("ecb") as server:
        settings = local_settings(db_path, server)
        [summary] = run_cycle(settings, configured_store(settings), ["ecb"], False, lambda *_: None)
    assert summary.status is RunStatus.OK and summary.offers_seen == 14
    import duckdb

    con = duckdb.connect(str(db_path), read_only=True)
    usd_per_eur = con.execute("SELECT usd_per_unit FROM fx_rates WHERE currency = 'EUR'").fetchone()
    usd_per_gbp = con.execute("SELECT usd_per_unit FROM fx_rates WHERE currency = 'GBP'").fetchone()
    con.close()
    assert usd_per_eur == (1.1585,)
    assert usd_per_gbp is not None and usd_per_gbp[0] == pytest.approx(1.1585 / 0.87915)


def test_server_error_leaves_rates_untouched(db_path: Path) -> None:
    with serving("ecb") as server:
        settings = local_settings(db_path, server)
        run_cycle(settings, configured_store(settings), ["ecb"], False, lambda *_: None)
        server.faults.append(lambda path, q: (503, {"Retry-After": "1"}, b"busy"))
        [summary] = run_cycle(settings, configured_store(settings), ["ecb"], False, lambda *_: None)
    assert summary.status is RunStatus.FAILED and "HTTP 503" in (summary.error or "")
