"""Advice from Python: the stored `advice` view, or a ranking made now on a read-only
connection and never stored (the advisor's `rank`)."""

from __future__ import annotations

import datetime as dt
import json

import duckdb

from priceadvisor.api.errors import PriceDataError
from priceadvisor.api.results import Result
from priceadvisor.config import Settings
from priceadvisor.config_basics import ConfigError
from priceadvisor.sizing.advisor import Options, rank
from priceadvisor.store import columns
from priceadvisor.store.columns import Kind, Schema


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
            _insert(scratch, [types.get(c, "VARCHAR") for c in columns], rows)
        return Result(scratch.table("ranked"))
    finally:
        scratch.close()


# How a declared type's values cross to DuckDB as Arrow columns: the Arrow kind, and the SQL
# that turns the column back into the type (TIMESTAMP as its text; VARCHAR[] as JSON text,
# which nanoarrow's builders cannot make lists of), with the Python values it takes as is.
_CROSSING: dict[str, tuple[Kind, str, tuple[type, ...]]] = {
    "VARCHAR": ("string", "{}", (str,)),
    "DOUBLE": ("float", "{}", (float, int)),
    "INTEGER": ("int", "{}", (int,)),
    "BIGINT": ("int", "{}", (int,)),
    "BOOLEAN": ("bool", "{}", (bool,)),
    "TIMESTAMP": ("string", "CAST({} AS TIMESTAMP)", (dt.datetime,)),
    "VARCHAR[]": ("string", "from_json({}, '[\"VARCHAR\"]')", (list,)),
}


def _insert(
    scratch: duckdb.DuckDBPyConnection, types: list[str], rows: list[tuple[object, ...]]
) -> None:
    """The rows into `ranked`: as Arrow columns (executemany costs DuckDB a pandas probe per
    value: ~0.15 s for 15 rows of 38 columns), or through executemany where a value is not
    one the Arrow crossing keeps exactly as executemany would."""
    crossing = [_CROSSING.get(t) for t in types]
    if any(c is None for c in crossing) or not all(
        _crosses(row[i], crossing[i]) for row in rows for i in range(len(types))
    ):
        scratch.executemany(f"INSERT INTO ranked VALUES ({', '.join('?' * len(types))})", rows)
        return
    schema: Schema = {f"c{i}": c[0] for i, c in enumerate(crossing) if c is not None}
    values = [tuple(_as_arrow(v) for v in row) for row in rows]
    scratch.register("_ranked_rows", columns.from_tuples(values, schema))
    sql = ", ".join(c[1].format(f"c{i}") for i, c in enumerate(crossing) if c is not None)
    scratch.execute(f"INSERT INTO ranked SELECT {sql} FROM _ranked_rows")
    scratch.unregister("_ranked_rows")


def _crosses(value: object, crossing: tuple[Kind, str, tuple[type, ...]] | None) -> bool:
    if value is None:
        return True
    if crossing is None or isinstance(value, bool) is not (crossing[0] == "bool"):
        return False
    if isinstance(value, dt.datetime):
        return value.tzinfo is None  # an aware time would be shifted by executemany
    if isinstance(value, list):
        return all(v is None or isinstance(v, str) for v in value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**53:
        return False  # exact as int64 and as float64 alike below this
    return isinstance(value, crossing[2])


def _as_arrow(value: object) -> object:
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, list):
        return json.dumps(value)
    return value
