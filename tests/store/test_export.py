"""The Parquet export replaces only what an earlier export wrote and never deletes anything else."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from priceadvisor.store import connections
from priceadvisor.store.export import MANIFEST, ExportError, export_database
from priceadvisor.store.handle import Store


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_export_into_a_new_folder_lists_what_it_wrote(migrated_db: Path, tmp_path: Path) -> None:
    target = tmp_path / "export"
    counts = export_database(Store(migrated_db), target)
    tables = {"price_history", "fetch_runs", "offers", "gpus", "regions", "fx_rates", "api_prices"}
    assert set(counts) == tables
    listed = set((target / MANIFEST).read_text().splitlines())
    assert listed == _files(target) - {MANIFEST}
    assert "gpus.parquet" in listed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # no staging left


def test_an_empty_folder_is_used(migrated_db: Path, tmp_path: Path) -> None:
    (tmp_path / "export").mkdir()
    export_database(Store(migrated_db), tmp_path / "export")
    assert (tmp_path / "export" / "offers.parquet").is_file()


def test_an_earlier_export_is_replaced(migrated_db: Path, tmp_path: Path) -> None:
    target = tmp_path / "export"
    export_database(Store(migrated_db), target)
    stale = target / "price_history" / "day=2000-01-01" / "data_0.parquet"
    stale.parent.mkdir(parents=True)
    duckdb.sql(f"COPY (SELECT 1 AS a) TO '{stale}' (FORMAT parquet)")
    listing = (target / MANIFEST).read_text() + "price_history/day=2000-01-01/data_0.parquet\n"
    (target / MANIFEST).write_text(listing)
    export_database(Store(migrated_db), target)
    assert not stale.exists()  # written by an export, so replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]


@pytest.mark.parametrize("own", ["notes.txt", "price_history/keep.csv", ".hidden"])
def test_a_file_the_export_did_not_write_stops_it(
    migrated_db: Path, tmp_path: Path, own: str
) -> None:
    target = tmp_path / "export"
    export_database(Store(migrated_db), target)
    before = _files(target)
    (target / own).write_text("mine\n")
    with pytest.raises(ExportError, match="file\\(s\\) an export did not write"):
        export_database(Store(migrated_db), target)
    assert _files(target) == before | {own}
    assert (target / own).read_text() == "mine\n"


def test_a_folder_of_someone_elses_is_refused(migrated_db: Path, tmp_path: Path) -> None:
    target = tmp_path / "photos"
    target.mkdir()
    (target / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(ExportError, match="not an earlier priceadvisor export"):
        export_database(Store(migrated_db), target)
    assert _files(target) == {"cat.jpg"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["photos"]


def test_the_exporting_connection_can_write_nowhere_else(migrated_db: Path, tmp_path: Path) -> None:
    allowed = tmp_path / "staging"
    allowed.mkdir()
    with connections.reader(migrated_db, 10, writable_dir=allowed) as con:
        con.execute(f"COPY (SELECT 1) TO '{allowed}/ok.csv'")
        for statement in (
            f"COPY (SELECT 1) TO '{tmp_path}/elsewhere.csv'",
            f"COPY (SELECT 1) TO '{allowed}/../escape.csv'",
            "SET enable_external_access = true",
            "SET allowed_directories = ['/']",
        ):
            with pytest.raises(duckdb.Error):
                con.execute(statement)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["ok.csv", "staging"]


def test_token_prices_are_exported_with_their_history(tmp_path: Path) -> None:
    """The LLM API token prices (the recorded OpenRouter listing) reach the export whole."""
    from priceadvisor.cli.app import main

    db = tmp_path / "offline.duckdb"
    with pytest.raises(SystemExit) as done:
        main(["--db", str(db), "fetch", "--offline", "--provider", "openrouter"])
    assert done.value.code in (0, None)
    counts = export_database(Store(db), tmp_path / "export")
    with connections.reader(db) as con:
        [(stored,)] = con.execute("SELECT count(*) FROM api_prices").fetchall()
    exported = duckdb.sql(f"SELECT count(*) FROM '{tmp_path / 'export' / 'api_prices.parquet'}'")
    assert stored > 0 and counts["api_prices"] == stored == exported.fetchone()[0]  # type: ignore[index]
