"""Advice from Python: the stored `advice` view, or a ranking made now on a read-only
connection and never stored (the advisor's `rank`)."""

from __future__ import annotations

import duckdb

from priceadvisor.api.errors import PriceDataError
from priceadvisor.api.results import Result
from priceadvisor.config import Settings
from priceadvisor.config_basics import ConfigError
from priceadvisor.sizing.advisor import Options, rank


def stored(con: duckdb.DuckDBPyConnection, workload: str | None, top: int) -> Result:
    """The best `top` rows per workload of the `advice` view (docs/sql.md)."""
    if workload is not None:
        _check_stored(con, workload)
    return Result(
        con.sql(
            "SELECT * FROM advice WHERE (? IS NULL OR workload = ?) AND rank <= ? "
            "ORDER BY workload, rank",
            params=[workload, workload, top],
        )
    )


def _check_stored(con: duckdb.DuckDBPyConnection, workload: str) -> None:
    names = [str(n) for (n,) in con.sql("SELECT DISTINCT workload FROM advice").fetchall()]
    if workload not in names:
        stored_names = ", ".join(sorted(names)) or "none"
        raise PriceDataError(
            f"no stored advice for workload {workload!r} (stored: {stored_names}; `advise` and "
            "the daemon store it, rank=True ranks the config's workloads now)"
        )


def ranked(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    workload: str | None,
    top: int,
    include_stale: bool,
    include_flagged: bool,
) -> Result:
    """The config's workloads (or the one named) ranked now, `top` per workload, with
    `flag_reason`; the advisor's temporary tables live in this connection only."""
    if not settings.workloads:
        raise PriceDataError(
            "no workloads configured: add [[workloads]] to the config (see docs/configuration.md)"
        )
    try:
        profiles = [settings.workload(workload)] if workload else list(settings.workloads)
    except ConfigError as exc:
        raise PriceDataError(str(exc)) from None
    options = Options.of(settings, include_stale, include_flagged)
    columns, rows = rank(con, profiles, keep=top, options=options)
    return _typed(con, columns, rows)


def _typed(
    con: duckdb.DuckDBPyConnection, columns: list[str], rows: list[tuple[object, ...]]
) -> Result:
    """The ranked rows with the stored advice's column types (the same ranking query fills
    core.advice), in a private in-memory database, so conversions keep DuckDB's types."""
    types = dict(con.sql("SELECT column_name, column_type FROM (DESCRIBE core.advice)").fetchall())
    declared = ", ".join(f'"{c}" {types.get(c, "VARCHAR")}' for c in columns)
    scratch = duckdb.connect()
    try:
        scratch.execute(f"CREATE TABLE ranked ({declared})")
        if rows:
            marks = ", ".join("?" for _ in columns)
            scratch.executemany(f"INSERT INTO ranked VALUES ({marks})", rows)
        return Result(scratch.table("ranked"))
    finally:
        scratch.close()
