"""Week-over-week changes in the digest are measured against a price that was an offer a week
ago: a glitch the offer guard flagged (a price that jumped and came back, kept in the history
with its `price_jump` flag) is no mover and no basis for a workload's change."""

from __future__ import annotations

from pathlib import Path

from priceadvisor.config import load_settings
from priceadvisor.notify import digest
from priceadvisor.records import RawQuote, utcnow
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.store import connections
from tests.conftest import ingest_quotes
from tests.notify.test_zone_keys import CONFIG, backdate


def h100(region: str, price: float) -> RawQuote:
    return RawQuote(
        region=region,
        instance_type="gpu_1x_h100_sxm5",
        pricing="on_demand",
        price=price,
        gpu_name_raw="H100 SXM5 80GB",
        gpu_count=1.0,
    )


def test_a_flagged_glitch_a_week_ago_is_no_basis_for_a_change(tmp_path: Path) -> None:
    config, db = tmp_path / "c.toml", tmp_path / "d.duckdb"
    config.write_text(CONFIG)
    steady = [h100(r, 2.49) for r in ("us-west-1", "us-west-2", "us-south-1")]
    ingest_quotes(db, "lambda", [h100("us-east-1", 2.49), *steady])
    backdate(db, 10)
    ingest_quotes(db, "lambda", [h100("us-east-1", 24.90), *steady])  # a wrong field, 10x
    backdate(db, 8)
    ingest_quotes(db, "lambda", [h100("us-east-1", 2.49), *steady])  # back: it was a glitch
    with connections.writer(db) as con:
        [(flag, price)] = con.execute(
            "SELECT flag, price_hour_usd FROM price_history WHERE region = 'us-east-1'"
            " AND valid_from <= $at AND valid_to > $at",
            {"at": utcnow() - digest.dt.timedelta(days=7)},
        ).fetchall()
        assert (flag, price) == ("price_jump", 24.90)  # what the digest reads a week back
        store_advice(con, load_settings(config).workloads)
        built = digest.build(con, load_settings(config), utcnow())
    assert built.movers == []  # not "$24.90 -> $2.49, -90.0%"
    east = [r for r in built.workloads if r["region"] == "us-east-1"]
    assert east and all(r["change"] is None for r in east)  # "new": nothing to compare with
