"""A query's result, held in memory as Arrow (nanoarrow) after its connection closed, turned
into pandas, polars or pyarrow by DuckDB on request: none of the three is a dependency."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duckdb
import nanoarrow as na

# What each conversion needs installed, as its distribution is named on PyPI, and DuckDB's
# relation method for it (DuckDB 1.5's `arrow()` is a batch reader; a Table is to_arrow_table).
_NEEDS = {"df": "pandas", "pl": "polars", "arrow": "pyarrow"}
_DUCKDB_METHOD = {"df": "df", "pl": "pl", "arrow": "to_arrow_table"}


class MissingLibraryError(ImportError):
    """A conversion asked for a library that is not installed; the message names the package."""


class Result:
    """Rows of one query: `.columns`, `.rows()`, and `.df()` (pandas), `.pl()` (polars),
    `.arrow()` (pyarrow) with DuckDB's types (timestamps with their zone, decimals, lists)."""

    def __init__(self, relation: duckdb.DuckDBPyRelation) -> None:
        """Reads the whole relation while its connection is open (the caller's reader)."""
        self.columns: list[str] = list(relation.columns)
        self.types: list[str] = [str(t) for t in relation.types]
        self._data = na.ArrayStream(relation).read_all()

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"<Result {len(self)} rows: {', '.join(self.columns)}>"

    def rows(self) -> list[tuple[Any, ...]]:
        """Every row as a tuple of Python values, in the columns' order."""
        with self._relation() as relation:
            return relation.fetchall()

    def records(self) -> list[dict[str, Any]]:
        """Every row as a dict of column to value (what `--format json` prints, typed)."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows()]

    def df(self) -> Any:
        """A pandas DataFrame (needs pandas)."""
        return self._convert("df")

    def pl(self) -> Any:
        """A polars DataFrame (needs polars)."""
        return self._convert("pl")

    def arrow(self) -> Any:
        """A pyarrow Table (needs pyarrow)."""
        return self._convert("arrow")

    @contextmanager
    def _relation(self) -> Iterator[duckdb.DuckDBPyRelation]:
        """The held rows as a relation of a private in-memory DuckDB, closed after use."""
        con = duckdb.connect()
        try:
            yield con.from_arrow(self._data)
        finally:
            con.close()

    def _convert(self, method: str) -> Any:
        _require(_NEEDS[method], method)
        with self._relation() as relation:
            try:
                return getattr(relation, _DUCKDB_METHOD[method])()
            except ModuleNotFoundError as exc:  # what the library itself needs (e.g. pyarrow)
                raise _missing(exc.name or str(exc), method) from None
            except duckdb.InvalidInputException as exc:
                needed = re.search(r"'([\w.-]+)' is required", str(exc))
                if needed is None:
                    raise
                raise _missing(needed.group(1), method) from None


def _require(package: str, method: str) -> None:
    try:
        importlib.import_module(package)
    except ImportError:
        raise _missing(package, method) from None


def _missing(package: str, method: str) -> MissingLibraryError:
    top = package.split(".", maxsplit=1)[0]
    return MissingLibraryError(
        f"Result.{method}() needs {top}, which is not installed: pip install {top}"
    )
