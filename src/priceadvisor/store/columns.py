"""Hand columns of Python values to DuckDB without copying them row by row.

A small Arrow array built with nanoarrow and scanned by DuckDB through the Arrow C stream
interface. nanoarrow rather than pyarrow: the same zero-copy scan for ~4 MB of memory instead of
~50 MB, which keeps the daemon within its memory budget (docs/benchmarks.md). Lists are not
supported by nanoarrow's builders: pass them as JSON text and parse them in SQL (from_json).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from operator import attrgetter, is_not
from typing import Any, Literal

import nanoarrow as na

Kind = Literal["string", "float", "int", "bool"]
_TYPES = {"string": na.string, "float": na.float64, "int": na.int64, "bool": na.bool_}

Schema = dict[str, Kind]


def table(columns: dict[str, list[Any]], schema: Schema) -> Any:
    """An Arrow struct array of `schema`'s columns, in order; DuckDB can register it."""
    arrays = [na.c_array(columns[name], _TYPES[kind]()) for name, kind in schema.items()]
    length = len(columns[next(iter(schema))]) if schema else 0
    return _struct(arrays, schema, length)


def from_objects(objects: Sequence[Any], schema: Schema) -> Any:
    """The same from the attributes of `objects`, one column at a time: no Python list of a
    column's values is ever built (half the peak memory for 100k quotes, and faster)."""
    arrays = [_column(objects, name, kind) for name, kind in schema.items()]
    return _struct(arrays, schema, len(objects))


def _column(objects: Sequence[Any], name: str, kind: Kind) -> Any:
    """One attribute as an array. An attribute no object sets (most sources leave several
    unset) becomes an all-null array without converting its values one by one: the check stops
    at the first value set and costs about half the conversion when there is none."""
    if any(map(is_not, map(attrgetter(name), objects), repeat(None))):
        return na.c_array(map(attrgetter(name), objects), _TYPES[kind]())
    return _nulls(kind, len(objects))


def _nulls(kind: Kind, length: int) -> Any:
    """An all-null array of `kind`: a zeroed validity bitmap and zeroed values (offsets)."""
    bitmap = bytes(-(-length // 8))
    if kind == "string":
        buffers = [bitmap, bytes(4 * (length + 1)), b""]
    else:
        buffers = [bitmap, bitmap if kind == "bool" else bytes(8 * length)]
    return na.c_array_from_buffers(_TYPES[kind](), length, buffers, null_count=length)


def _struct(arrays: list[Any], schema: Schema, length: int) -> Any:
    struct = na.struct({name: array.schema for name, array in zip(schema, arrays, strict=True)})
    return na.Array(na.c_array_from_buffers(struct, length, [None], children=arrays))


def from_rows(rows: list[dict[str, Any]], schema: Schema) -> Any:
    """The same from row dicts (small tables: catalogs, workloads)."""
    return table({name: [row.get(name) for row in rows] for name in schema}, schema)
