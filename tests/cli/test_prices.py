"""`prices` as people read it: 80 columns, whole numbers, filters by name or code, all rows
for machines, and recorded data that never passes for live."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from priceadvisor.cli import prices as layout
from priceadvisor.config_basics import recorded_db_path
from priceadvisor.manifest import manifest
from priceadvisor.store import connections, reads
from tests.conftest import cli, query


@pytest.fixture(scope="module")
def offline_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every recorded provider, fetched once for the module (the CLI's own offline fetch)."""
    from priceadvisor.cli.app import main

    db = tmp_path_factory.mktemp("prices") / "offline.duckdb"
    with pytest.raises(SystemExit) as done:
        main(["--db", str(db), "fetch", "--offline", "--format", "json"])
    assert done.value.code in (0, None)
    return db


def prices(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str, str]:
    return cli(capsys, "--db", str(db), "prices", *args)


def test_default_table_fits_80_columns_with_every_price_whole(offline_db: Path) -> None:
    with connections.reader(offline_db) as con:
        columns = layout.view_columns(layout.DEFAULT)
        table = reads.prices(con, reads.OfferFilter(), "gpu-hour", None, columns)
    console = Console(width=80, record=True, color_system=None)
    console.print(layout.to_rich(table, "Current GPU offers (USD)", ["a note"]))
    lines = console.export_text().splitlines()
    assert len(table.rows) > 500 and all(len(line) <= 80 for line in lines)
    text = "\n".join(lines)
    gpu_hour, hour = columns.index("price_gpu_hour_usd"), columns.index("price_hour_usd")
    for row in table.rows:  # every price and GPU model appears whole (never cut with "…")
        assert layout._cell(row[gpu_hour], "money") in text
        assert layout._cell(row[hour], "money") in text
        assert f" {row[columns.index('gpu_model')]} " in text
    assert "…" not in "".join(line for line in lines if "$/" in line)


def test_numbers_are_right_aligned_by_type(offline_db: Path) -> None:
    with connections.reader(offline_db) as con:
        table = reads.prices(
            con, reads.OfferFilter(), "hour", 40, layout.view_columns(layout.DEFAULT)
        )
    console = Console(width=80, record=True, color_system=None)
    console.print(layout.to_rich(table, "t", []))
    rows = [
        line
        for line in console.export_text().splitlines()
        if line.startswith(
            ("aws", "azure", "vast", "runpod", "lambda", "oracle", "gcp", "coreweave")
        )
    ]
    ends = {len(line.rstrip().removesuffix("yes").removesuffix("no").rstrip()) for line in rows}
    assert len(ends) == 1  # the $/h column ends in the same place on every row


def test_table_says_how_much_it_shows_and_machines_get_every_row(
    capsys: pytest.CaptureFixture[str], offline_db: Path
) -> None:
    [(total,)] = query(
        offline_db,
        "select count(*) from offers where gpu_model is not null "
        "and pricing in ('on_demand', 'spot') "
        "and price_origin = 'published' and flag is null",
    )
    code, out, _ = prices(capsys, offline_db)
    assert code == 0 and f"showing 50 of {total}" in out
    code, out, _ = prices(capsys, offline_db, "--format", "csv")
    assert code == 0 and len(list(csv.reader(io.StringIO(out)))) == total + 1
    code, out, _ = prices(capsys, offline_db, "--format", "json", "--limit", "7")
    assert code == 0 and len(json.loads(out)) == 7


def test_flagged_offers_show_only_when_asked_with_their_reason(
    capsys: pytest.CaptureFixture[str], offline_db: Path
) -> None:
    """The recorded RunPod MI300X Community price (communityCloud: false) is no offer."""
    code, out, _ = prices(capsys, offline_db, "--gpu", "MI300X", "-f", "json")
    rows = json.loads(out)
    assert code == 0 and rows and not any(r["region"] == "community" for r in rows)
    code, out, _ = prices(capsys, offline_db, "--gpu", "MI300X")
    assert "1 flagged offer left out: --include-flagged" in out
    code, out, _ = prices(capsys, offline_db, "--gpu", "MI300X", "--include-flagged", "-f", "json")
    [community] = [r for r in json.loads(out) if r["region"] == "community"]
    assert community["provider"] == "runpod" and community["price_gpu_hour_usd"] == 0.5
    assert "communityCloud: false" in community["flag_reason"]
    code, out, _ = prices(capsys, offline_db, "--gpu", "MI300X", "--include-flagged")
    assert "communityCloud" in out


def test_columns_choose_and_wide_shows_all(
    capsys: pytest.CaptureFixture[str], offline_db: Path
) -> None:
    code, out, _ = prices(capsys, offline_db, "-f", "json", "--limit", "1", "--columns", "gpu,hour")
    assert code == 0 and list(json.loads(out)[0]) == ["gpu_model", "price_hour_usd"]
    code, out, _ = prices(capsys, offline_db, "-f", "json", "--limit", "1")
    assert list(json.loads(out)[0]) == list(reads.PRICE_COLUMNS)
    code, _, err = prices(capsys, offline_db, "--columns", "gpu,colour")
    assert code == 2 and "colour" in err


def test_names_and_codes_filter_alike(capsys: pytest.CaptureFixture[str], offline_db: Path) -> None:
    def rows(*args: str) -> list[dict[str, object]]:
        code, out, err = prices(capsys, offline_db, "-f", "json", *args)
        assert code == 0, err
        return json.loads(out)

    assert rows("--continent", "Europe") == rows("--continent", "eu") != []
    assert rows("--country", "Germany") == rows("--country", "DE") != []
    assert {r["region"] for r in rows("--country", "de", "--columns", "region,country")}
    b200 = rows("--gpu", "B200")
    assert b200 and {r["gpu_model"] for r in b200} == {"B200-180GB"}  # not GB200
    h100 = {r["gpu_model"] for r in rows("--gpu", "h100")}
    assert h100 <= {"H100-SXM-80GB", "H100-PCIE-80GB", "H100-NVL-94GB"} and len(h100) > 1
    assert {r["gpu_model"] for r in rows("--gpu", "H100-S*")} == {"H100-SXM-80GB"}


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--country", "Atlantis", "unknown country"),
        ("--continent", "Atlantis", "unknown continent"),
        ("--gpu", "B2000", "unknown GPU"),
        ("--pricing", "preemptible", "unknown pricing"),
        ("--provider", "nope", "unknown provider"),
    ],
)
def test_unknown_values_are_usage_errors(
    capsys: pytest.CaptureFixture[str], offline_db: Path, option: str, value: str, says: str
) -> None:
    code, out, err = prices(capsys, offline_db, option, value)
    assert code == 2 and out == "" and err.startswith(f"error: {says}")
    assert len(err.strip().splitlines()) == 1


def test_ecb_is_marked_as_fx_not_an_offer_source(
    capsys: pytest.CaptureFixture[str], offline_db: Path
) -> None:
    _, _, err = prices(capsys, offline_db, "-p", "nope")
    assert "ecb (FX)" in err
    _, out, _ = cli(capsys, "--db", str(offline_db), "providers", "-f", "json")
    kinds = {p["id"]: p["kind"] for p in json.loads(out)}
    assert kinds["ecb"] == "FX rates" and kinds["azure"] == "offers"


def test_offline_fetch_goes_to_its_own_database_and_is_marked_recorded(
    capsys: pytest.CaptureFixture[str], offline_db: Path
) -> None:
    code, _, err = cli(capsys, "fetch", "--offline", "-p", "oracle")
    assert code == 0 and str(recorded_db_path()) in err
    assert recorded_db_path().is_file()
    assert not recorded_db_path().with_name("priceadvisor.duckdb").exists()  # live untouched
    assert query(recorded_db_path(), "select distinct source from fetch_runs") == [("recorded",)]
    code, out, _ = prices(capsys, offline_db, "--limit", "3")
    assert "recorded responses, not live prices" in out and "ecb" not in out.splitlines()[-1]
    code, out, _ = cli(capsys, "--db", str(offline_db), "doctor", "-f", "json")
    azure = next(p for p in json.loads(out)["providers"] if p["provider"] == "azure")
    assert azure["state"] == "recorded" and azure["source"] == "recorded"


def test_into_live_writes_the_configured_database(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = cli(capsys, "fetch", "--offline", "--into-live", "-p", "oracle")
    live = recorded_db_path().with_name("priceadvisor.duckdb")
    assert code == 0 and live.is_file() and not recorded_db_path().exists()
    assert query(live, "select source from fetch_runs") == [("recorded",)]


def test_demo_lists_offer_sources_and_no_unmapped_gpus(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = cli(capsys, "--db", str(tmp_path / "demo.duckdb"), "demo")
    assert code == 0
    from priceadvisor.manifest import manifest, manifest_ids

    # not ecb (FX), nor a provider off by default (no recorded response yet, or nothing storable)
    offer_sources = [
        p for p in manifest_ids() if manifest(p).kind == "prices" and manifest(p).enabled_by_default
    ]
    [sources] = [line for line in out.splitlines() if "offers from" in line]
    assert f"offers from {len(offer_sources)} providers;" in sources
    assert len(offer_sources) < len(manifest_ids())
    cheapest = out[out.index("Cheapest current GPU offers") :].split("The demo database")[0]
    rows = [line.split() for line in cheapest.splitlines()[3:] if line.strip()]
    assert rows and all(len(r) >= 7 for r in rows)  # a GPU and a count in every row


def test_help_has_no_python_type_labels(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("prices", "fetch", "estimate"):
        code, out, _ = cli(capsys, command, "--help")
        assert code == 0 and "<bool>" not in out and "list[str]" not in out, command
    code, out, _ = cli(capsys, "prices", "--help")
    assert "<str>…" in out  # --provider repeats; the label says so (cli/common.py)
    code, out, _ = cli(capsys, "estimate", "--help")
    assert "llama-3.1-70b" in out and "mixtral" in out.lower()


def test_generic_tables_align_numbers_by_column_type_not_first_row() -> None:
    from priceadvisor.cli.output import to_rich

    table = reads.Table(["workload", "cost_usd"], [("a", None), ("b", 12.5), ("c", 1234.25)])
    console = Console(width=60, record=True, color_system=None)
    console.print(to_rich(table))
    lines = [
        line for line in console.export_text().splitlines() if "12.5" in line or "1234" in line
    ]
    assert len({line.rstrip(" │").__len__() for line in lines}) == 1  # right-aligned together


@pytest.mark.parametrize(
    ("args", "shape"),
    [
        (["prices", "--limit", "2"], list),
        (["history", "--limit", "2"], list),
        (["providers"], list),
        (["calibrate"], list),
        (["alerts", "list"], list),
        (["doctor"], dict),
        (["estimate", "--model", "llama-3.1-8b", "--gpu", "H100-SXM-80GB"], dict),
        (["tco", "--gpu", "H100-SXM-80GB", "--purchase-price", "30000"], dict),
    ],
)
def test_json_shapes_are_as_the_readme_says(
    capsys: pytest.CaptureFixture[str], offline_db: Path, args: list[str], shape: type
) -> None:
    _, out, _ = cli(capsys, "--db", str(offline_db), *args, "-f", "json")
    parsed = json.loads(out)
    assert isinstance(parsed, shape)
    if shape is list:
        assert all(isinstance(item, dict) for item in parsed)


def test_recorded_providers_are_counted_and_named_on_request(
    capsys: pytest.CaptureFixture[str], offline_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    from priceadvisor.cli import app as cli_app

    screen = Console(width=80, record=True, color_system=None, soft_wrap=True)
    monkeypatch.setattr(cli_app, "out", screen)
    from priceadvisor.manifest import manifest

    runs = query(offline_db, "select distinct provider from fetch_runs where source = 'recorded'")
    # ecb (FX) and openrouter (API token prices) record no offers
    recorded = 1 + sum(manifest(p).kind == "prices" for (p,) in runs)
    code, _, _ = prices(capsys, offline_db, "--limit", "3")
    lines = screen.export_text().splitlines()
    assert code == 0 and all(len(line) <= 80 for line in lines)
    note = f"recorded responses, not live prices, for {recorded - 1} providers"  # less ecb
    assert any(line.startswith(note) for line in lines), lines
    code, _, _ = prices(capsys, offline_db, "--limit", "3", "--verbose")
    lines = screen.export_text().splitlines()
    text = " ".join(lines)
    assert code == 0 and all(len(line) <= 80 for line in lines)  # wrapped at the width
    assert all(f" {p}," in text or f" {p}" in text for p in ("aws", "vultr", "digitalocean"))


def test_an_empty_default_database_points_at_the_recorded_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    live = recorded_db_path().with_name("priceadvisor.duckdb")
    code, _, err = cli(capsys, "prices")  # nothing fetched, nothing recorded: no hint
    assert code == 1 and "recorded" not in err
    code, _, _ = cli(capsys, "fetch", "--offline", "-p", "oracle")
    assert code == 0 and not live.exists()
    hint = f"add --db {recorded_db_path()}"
    for command in (["prices"], ["history"], ["sql", "select 1"]):  # no default database
        code, _, err = cli(capsys, *command)
        assert code == 1 and err.count("\n") == 1 and err.rstrip().endswith(hint), err
    with connections.writer(live):  # a default database with no fetch in it
        pass
    code, out, _ = cli(capsys, "prices")
    assert code == 0 and " ".join(out.split()).endswith(hint)  # a note, wrapped at the width
    code, out, _ = cli(capsys, "--db", str(recorded_db_path()), "prices", "--limit", "1")
    assert code == 0 and hint not in out


def test_commitment_prices_are_listed_only_when_asked_for(
    capsys: pytest.CaptureFixture[str], offline_db: Path
) -> None:
    code, out, _ = prices(capsys, offline_db, "--pricing", "reserved", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert rows and all(r["pricing"] == "reserved" and r["term_months"] >= 1 for r in rows)
    providers = {r["provider"] for r in rows}
    assert {"azure", "civo", "latitude", "packetai"} <= providers
    code, out, _ = prices(capsys, offline_db, "--format", "json")
    assert code == 0
    default = json.loads(out)
    assert {r["pricing"] for r in default} <= {"on_demand", "spot"}
    assert all(r["term_months"] is None for r in default)


def test_the_commitment_table_shows_the_term(
    capsys: pytest.CaptureFixture[str], offline_db: Path
) -> None:
    code, out, _ = prices(capsys, offline_db, "--pricing", "reserved", "-p", "civo")
    assert code == 0 and "months" in out
    assert [line.split()[4] for line in out.splitlines() if line.startswith("civo ")] == [
        "36",
        "24",
        "12",
        "6",
    ]


def test_stale_prices_are_marked_from_the_interval_each_run_recorded(
    capsys: pytest.CaptureFixture[str], offline_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run stores the fetch interval it was scheduled at, so `prices` (which loads no
    configuration) can say which offers were not seen for twice their provider's interval."""
    import datetime as dt

    from priceadvisor.cli import price_listing
    from priceadvisor.records import utcnow

    [(azure_interval,)] = query(
        offline_db, "select max(interval_s) from fetch_runs where provider = 'azure'"
    )
    assert azure_interval == 6 * 3600  # the manifest's default: no config in this test
    by_provider = "select provider, max(interval_s) from fetch_runs group by 1"
    recorded = dict(query(offline_db, by_provider))
    assert recorded == {p: manifest(p).interval for p in recorded}  # each run its own provider's
    assert len(set(recorded.values())) > 1  # so a run given another's interval would show
    with connections.reader(offline_db) as con:
        assert reads.stale_providers(con, utcnow()) == {}  # fetched just now
        later = utcnow() + dt.timedelta(seconds=2.5 * azure_interval)
        stale = reads.stale_providers(con, later)
    [(azure_offers,)] = query(offline_db, "select count(*) from offers where provider = 'azure'")
    assert stale["azure"] == azure_offers
    monkeypatch.setattr(price_listing, "utcnow", lambda: later)
    code, out, _ = prices(capsys, offline_db, "--limit", "1")
    text = " ".join(out.split())
    assert code == 0 and "stale: offers not seen for over twice" in text
    assert f"azure ({azure_offers})" in text


def _on_terminal(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    db: Path,
    width: int,
    *args: str,
) -> list[str]:
    """`prices` as a terminal of `width` columns shows it (the Typer command's console)."""
    from priceadvisor.cli import app

    screen = Console(width=width, record=True, color_system=None, soft_wrap=True)
    monkeypatch.setattr(app, "out", screen)
    code, _, err = prices(capsys, db, *args)
    assert code == 0, err
    return screen.export_text().splitlines()


@pytest.mark.parametrize("width", [40, 80])
def test_a_narrow_terminal_keeps_provider_model_and_price_readable(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    offline_db: Path,
    width: int,
) -> None:
    code, out, err = prices(capsys, offline_db, "--format", "json", "--limit", "50")
    assert code == 0, err
    offers = json.loads(out)
    lines = _on_terminal(capsys, monkeypatch, offline_db, width)
    table = lines[3 : 3 + len(offers)]
    assert all(len(line) <= width for line in table) and "…" not in "".join(table)
    for line, offer in zip(table, offers, strict=True):  # each offer whole, on its own line
        words = line.split()
        assert words[0] == offer["provider"] and offer["gpu_model"] in words
        assert layout._cell(offer["price_gpu_hour_usd"], "money") in words
    header = lines[1].split()
    if width == 80:  # the whole default table, and no note
        assert header == ["provider", "region", "GPU", "n", "pricing", "$/GPU-h", "$/h", "avail"]
        assert not any("narrow terminal" in line for line in lines)
    else:  # the lower-priority columns go first, and a note says which
        assert header[0] == "provider" and "GPU" in header and "$/GPU-h" in header
        assert "avail" not in header and "$/h" not in header and "region" not in header
        note = " ".join(lines[lines.index(next(ln for ln in lines if "narrow" in ln)) :])
        assert "narrow terminal: region" in note and "avail left out (--columns)" in note


def test_columns_asked_for_are_kept_on_a_narrow_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, offline_db: Path
) -> None:
    args = ("--columns", "provider,region,gpu,hour,available", "--limit", "3")
    lines = _on_terminal(capsys, monkeypatch, offline_db, 40, *args)
    header = lines[1].split()  # as asked, however squeezed
    assert len(header) == 5 and header[-2:] == ["$/h", "avail"]
    assert not any("narrow terminal" in line for line in lines)


def test_a_partial_gpu_count_is_shown_whole(
    capsys: pytest.CaptureFixture[str], offline_db: Path
) -> None:
    """Azure's NV6ads_A10_v5 holds a sixth of an A10 (gpu_count 0.1667): the `n` column
    showed 0, beside a per-GPU price six times its hourly price."""
    code, out, _ = prices(capsys, offline_db, "--gpu", "A10", "--columns", "instance,n,hour")
    assert code == 0
    shown = [line.split()[1:] for line in out.splitlines() if "Standard_NV6ads_A10_v5" in line]
    assert shown and all(n == "0.1667" for n, _ in shown)
