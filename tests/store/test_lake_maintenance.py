"""`priceadvisor lake maintain` on a lake with a PostgreSQL catalog: fewer data files, old
snapshots expired, old files deleted, and the history reads the same before and after."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import stamina

from priceadvisor.records import RawQuote, utcnow
from priceadvisor.store import connections, lake, leases, maintenance
from tests.conftest import cli, ingest_quotes
from tests.store.test_lake_cli import lake_config

VIEWS = ("price_history", "fetch_runs", "offers", "gpus", "regions", "advice", "alerts")
# Each ingest writes more rows than DuckLake inlines into the catalog: real Parquet files.
OFFERS = 30
# Enough offers that each ingest deletes more than DuckLake inlines from the first data file.
REPRICED_OFFERS = 60


def quotes(base: float, offers: int = OFFERS) -> list[RawQuote]:
    """One 8x H100 offer per instance type, near $100/h: a market the offer guard finds
    ordinary (prices 1, 2, 3 ... $/h would make the cheapest an outlier it leaves out)."""
    return [
        RawQuote(
            region="eastus",
            instance_type=f"Standard_ND96isr_H100_v{i}",
            pricing="on_demand",
            price=100 + base + i,
            gpu_name_raw="H100 SXM",
            gpu_count=8.0,
        )
        for i in range(offers)
    ]


@pytest.fixture
def setup(pg_dsn: str, tmp_path: Path) -> tuple[Path, lake.Lake]:
    return lake_config(tmp_path, f"postgres:{pg_dsn}")


def views(target: lake.Lake) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the history's views, in a stable order."""
    with connections.reader(target) as con:
        return {
            view: con.execute(f"SELECT * FROM {view} ORDER BY ALL").fetchall() for view in VIEWS
        }


def stats(target: lake.Lake) -> tuple[int, int, dt.datetime]:
    """(data files the current snapshot reads, snapshots, the oldest snapshot's time)."""
    with connections.writer(target) as con:
        row = con.execute("SELECT min(snapshot_time) FROM ducklake_snapshots('lake')").fetchone()
        assert row is not None
        return maintenance.data_files(con), maintenance.snapshot_count(con), row[0]


def parquet_files(target: lake.Lake) -> set[Path]:
    return set(Path(target.data_path).rglob("*.parquet"))


def prices_as_of(
    capsys: pytest.CaptureFixture[str], config: Path, moment: dt.datetime
) -> tuple[int, Any, str]:
    code, out, err = cli(
        capsys, "--config", str(config), "prices", "--format", "json", "--as-of", moment.isoformat()
    )
    return code, json.loads(out) if code == 0 else None, err


def maintain(capsys: pytest.CaptureFixture[str], config: Path, *args: str) -> list[str]:
    code, out, err = cli(capsys, "--config", str(config), "lake", "maintain", *args)
    assert code == 0, err
    return out.splitlines()


def test_maintain_merges_expires_and_cleans_without_changing_the_history(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, lake.Lake]
) -> None:
    config, target = setup
    ingest_quotes(target, "azure", quotes(1.0))
    expired_moment = dt.datetime.now(dt.UTC)
    time.sleep(1)
    ingest_quotes(target, "azure", quotes(2.0))
    time.sleep(1)
    cutoff = dt.datetime.now(dt.UTC)  # the retention reaches back to here
    time.sleep(3)  # the command starts within this gap: its cutoff is no later
    for base in (3.0, 4.0):
        ingest_quotes(target, "azure", quotes(base))
    before = views(target)
    as_of_before = {when: prices_as_of(capsys, config, when) for when in (cutoff, expired_moment)}
    assert [len(answer[1]) for answer in as_of_before.values()] == [OFFERS, OFFERS]
    files, snapshots, _ = stats(target)

    keep = f"{(dt.datetime.now(dt.UTC) - cutoff).total_seconds():.3f}s"
    lines = maintain(capsys, config, "--keep", keep)

    assert [line.split()[0] for line in lines] == [
        "flushed",
        "rewrote",
        "merged",
        "expired",
        "deleted",
    ]
    _, snapshots_after, oldest = stats(target)
    # The flush adds a file per table it wrote out of the catalog; the merge folds the rest.
    merged_from, merged_to = (int(n) for n in lines[2].split("; data files ")[1].split(" -> "))
    assert merged_to < merged_from and merged_from >= files
    assert snapshots_after < snapshots
    # The snapshot current at the cutoff is kept: `--as-of` works back to the cutoff itself.
    assert expired_moment < oldest.astimezone(dt.UTC) <= cutoff
    assert views(target) == before
    assert prices_as_of(capsys, config, cutoff) == as_of_before[cutoff]
    code, _, err = prices_as_of(capsys, config, expired_moment)
    assert code == 1 and "has no snapshot as early as" in err and "snapshot_retention" in err
    assert err.count("\n") == 1

    # The files the merge and rewrite replaced wait out the grace; the next run deletes them.
    on_disk = parquet_files(target)
    time.sleep(1.1)
    lines = maintain(capsys, config, "--keep", "90d", "--grace", "1s")
    deleted = int(lines[4].split()[1])
    # (that run's flush may write new files: the lease rows inlined since)
    assert deleted > 0 and len(on_disk - parquet_files(target)) == deleted
    assert views(target) == before
    assert prices_as_of(capsys, config, cutoff) == as_of_before[cutoff]


def repriced(run: int) -> list[RawQuote]:
    """A different quarter of the offers is repriced each run and the last run's quarter goes
    back to its base price: each ingest closes some intervals in several data files of
    core.current_offers, as real fetches do."""
    return [
        dataclasses.replace(q, price=q.price + (run if (i + run) % 4 == 0 else 0) / 100)
        for i, q in enumerate(quotes(1.0, REPRICED_OFFERS))
    ]


def storage(target: lake.Lake) -> tuple[int, int, int]:
    """(rows inlined in the catalog, delete files, dead rows of core.current_offers)."""
    with connections.writer(target) as con:
        return (
            maintenance.inlined_rows(con),
            maintenance.delete_files(con),
            maintenance.dead_rows(con, "core", "current_offers"),
        )


def test_maintain_flushes_inlined_rows_and_rewrites_deleted_ones_keeping_time_travel(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, lake.Lake]
) -> None:
    config, target = setup
    moments = []
    for run in range(8):
        ingest_quotes(target, "azure", repriced(run))
        moments.append(dt.datetime.now(dt.UTC))
        time.sleep(0.2)
    before = views(target)
    as_of_before = [prices_as_of(capsys, config, moment) for moment in moments]
    inlined, _, dead = storage(target)
    # DuckLake's default inlining holds the small commits (runs, coverage, the few rows each
    # ingest deletes from a data file) in the catalog database.
    assert inlined > 0 and dead > 0

    with connections.writer(target) as con:
        report = maintenance.run(con, dt.timedelta(days=90))
        inlined_after = maintenance.inlined_rows(con)
        dead_after = maintenance.dead_rows(con, "core", "current_offers")

    assert report.flushed.rows > 0 and inlined_after == 0
    assert report.rewritten.files_processed > 0 and report.rewritten.files_created > 0
    assert dead_after < dead
    assert report.rewritten.after < report.rewritten.before
    assert views(target) == before
    assert [prices_as_of(capsys, config, moment) for moment in moments] == as_of_before


def test_maintain_takes_the_lease_and_gives_it_back(
    capsys: pytest.CaptureFixture[str], setup: tuple[Path, lake.Lake]
) -> None:
    config, target = setup
    config.write_text('lock_timeout = "1s"\n' + config.read_text())
    ingest_quotes(target, "azure", quotes(1.0))
    with connections.writer(target) as con:
        assert leases.acquire(con, "maintenance", "peer-host:42:ab", 3600, utcnow())
    code, _, err = cli(capsys, "--config", str(config), "lake", "maintain")
    assert code == 1 and err.startswith("error: peer-host:42:ab holds the maintenance lease")
    assert err.count("\n") == 1
    with connections.writer(target) as con:
        assert leases.release(con, "maintenance", "peer-host:42:ab", utcnow())
    maintain(capsys, config)
    with connections.reader(target) as con:
        assert leases.current(con, "maintenance")[0] is None


def test_a_duckdb_file_has_nothing_to_maintain(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = cli(capsys, "--db", str(tmp_path / "p.duckdb"), "lake", "maintain")
    assert code == 2 and "nothing to maintain" in err and "CHECKPOINT" in err
    assert err.count("\n") == 1 and not out


def test_an_unreachable_lake_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config, _ = lake_config(tmp_path, "postgres:host=127.0.0.1 port=1 dbname=none")
    code, _, err = cli(capsys, "--config", str(config), "lake", "maintain")
    assert code == 1 and "cannot attach" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('snapshot_retention = "soon"', "invalid duration 'soon'"),
        ('maintenance = "0 3 * *"', "invalid cron '0 3 * *'"),
    ],
)
def test_bad_lake_maintenance_settings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, toml: str, message: str
) -> None:
    config, _ = lake_config(tmp_path, str(tmp_path / "catalog.ducklake"))
    config.write_text(config.read_text() + toml + "\n")
    code, _, err = cli(capsys, "--config", str(config), "lake", "maintain")
    assert code == 2 and message in err and err.count("\n") == 1


def test_bad_keep_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config, _ = lake_config(tmp_path, str(tmp_path / "catalog.ducklake"))
    code, _, err = cli(capsys, "--config", str(config), "lake", "maintain", "--keep", "often")
    assert code == 2 and "--keep: invalid duration 'often'" in err and err.count("\n") == 1


@pytest.fixture
def _real_retries() -> Iterator[None]:
    """Conflicts are real here: retries back off as in production (conftest turns waits off)."""
    stamina.set_testing(False)
    yield
    stamina.set_testing(True, attempts=3)


@pytest.mark.usefixtures("_real_retries")
def test_ingests_keep_working_while_the_lake_is_maintained(
    setup: tuple[Path, lake.Lake],
) -> None:
    _, target = setup
    for base in (1.0, 2.0, 3.0):
        ingest_quotes(target, "azure", quotes(base))
    failures: list[BaseException] = []

    def ingest_more() -> None:
        try:
            for base in (4.0, 5.0, 6.0):
                ingest_quotes(target, "azure", quotes(base))
        except BaseException as exc:
            failures.append(exc)

    ingester = threading.Thread(target=ingest_more)
    ingester.start()
    for _ in range(3):
        with connections.writer(target) as con:
            maintenance.run(con, dt.timedelta(seconds=1), dt.timedelta(seconds=1))
    ingester.join(timeout=300)
    assert not failures
    with connections.reader(target) as con:
        runs = con.execute("SELECT count(*) FROM fetch_runs WHERE status = 'ok'").fetchone()
        prices = con.execute("SELECT sum(price_hour_usd) FROM offers").fetchone()
        history = con.execute("SELECT count(*) FROM price_history").fetchone()
    assert runs == (6,)
    assert prices == (sum(100 + 6.0 + i for i in range(OFFERS)),)  # the last ingest's prices
    assert history == (6 * OFFERS,)  # every price each run changed, closed or current
