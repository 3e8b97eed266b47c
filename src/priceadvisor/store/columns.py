"""Hand columns of Python values to DuckDB without copying them row by row.

A small Arrow array built with nanoarrow and scanned by DuckDB through the Arrow C stream
interface. nanoarrow rather than pyarrow: the same zero-copy scan for ~4 MB of memory instead of
~50 MB, which keeps the daemon within its memory budget (docs/benchmarks.md). Lists are not
supported by nanoarrow's builders: pass them as JSON text and parse them in SQL (from_json).

Columns of objects (`from_objects`) whose values repeat, such as a snapshot's regions, instance
types and GPU names, are dictionary-encoded: each distinct value once and a 16-bit code a row,
which DuckDB reads back as the plain type (VARCHAR, DOUBLE). At 100,000 quotes the staged
tables take ~5 MB instead of ~14 MB, held through the ingest (docs/benchmarks.md).
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from operator import attrgetter, countOf
from typing import Any, Literal

import nanoarrow as na

# "shared_float": floats whose equal values may stand for each other (RawQuote shares equal
# values, so 0.0 and -0.0 are already one value there): dictionary-encoded like strings. A
# plain "float" keeps every value as given.
Kind = Literal["string", "float", "shared_float", "int", "bool", "binary"]
_TYPES = {
    "string": na.string,
    "float": na.float64,
    "shared_float": na.float64,
    "int": na.int64,
    "bool": na.bool_,
    "binary": na.binary,
}
_ENCODED: frozenset[Kind] = frozenset({"string", "shared_float"})

Schema = dict[str, Kind]


def table(columns: dict[str, list[Any]], schema: Schema) -> Any:
    """An Arrow struct array of `schema`'s columns, in order; DuckDB can register it."""
    arrays = [na.c_array(columns[name], _TYPES[kind]()) for name, kind in schema.items()]
    length = len(columns[next(iter(schema))]) if schema else 0
    return _struct(arrays, schema, length)


def from_objects(
    objects: Sequence[Any], schema: Schema, positions: tuple[str, Sequence[int]] | None = None
) -> Any:
    """The same from the attributes of `objects`, one column at a time: no Python list of a
    column's values is ever built (half the peak memory for 100k quotes, and faster).
    `positions` (a name and one integer per object) adds a last column saying where each
    object came from, so a query's rows can be traced back to their objects."""
    unset = _unset(objects, schema)
    arrays = [
        _nulls(kind, len(objects)) if name in unset else _column(objects, name, kind)
        for name, kind in schema.items()
    ]
    if positions is not None:
        name, values = positions
        schema = schema | {name: "int"}
        arrays.append(na.c_array(values, na.int64()))
    return _struct(arrays, schema, len(objects))


def _unset(objects: Sequence[Any], schema: Schema) -> set[str]:
    """The attributes no object sets (most sources leave several unset). They become all-null
    arrays without converting their values one by one. One pass over the objects checks every
    attribute the first object leaves unset at once (half the time of a pass per attribute);
    only when one of them is set somewhere is each checked on its own."""
    if not objects:
        return set(schema)
    candidates = [name for name in schema if getattr(objects[0], name) is None]
    if not candidates:
        return set()
    # attrgetter of one name returns the value itself, of several a tuple
    nones = (None,) * len(candidates) if len(candidates) > 1 else None
    if _all_equal(objects, attrgetter(*candidates), nones):
        return set(candidates)
    return {name for name in candidates if _all_equal(objects, attrgetter(name), None)}


def _all_equal(objects: Sequence[Any], value_of: attrgetter[Any], expected: Any) -> bool:
    return countOf(map(value_of, objects), expected) == len(objects)


def _column(objects: Sequence[Any], name: str, kind: Kind) -> Any:
    if kind in _ENCODED:
        encoded = _dictionary_encoded(map(attrgetter(name), objects), _TYPES[kind]())
        if encoded is not None:
            return encoded
    return na.c_array(map(attrgetter(name), objects), _TYPES[kind]())


class _Codes(dict[Any, bytes]):
    """Each distinct value's code, numbered in order of first sight (None is a value too: its
    dictionary entry is null), as the two bytes of an int16 in the machine's byte order:
    joining a column's codes makes the index buffer in one call, about twice as fast as
    appending each code to an `array("h")` (docs/benchmarks.md)."""

    def __missing__(self, value: Any) -> bytes:
        # OverflowError past 16 bits: _dictionary_encoded's signal to keep the column plain
        self[value] = code = len(self).to_bytes(2, sys.byteorder, signed=True)
        return code


def _dictionary_encoded(values: Iterable[Any], value_type: Any) -> Any:
    """`values` as a dictionary array with 16-bit codes, or None when they have more distinct
    values than 16 bits number (then they hardly repeat: the plain array is as small)."""
    codes = _Codes()
    try:
        indices = memoryview(_joined(map(codes.__getitem__, values))).cast("h")
    except OverflowError:
        return None
    encoded = na.c_array_from_buffers(
        na.dictionary(na.int16(), value_type),
        len(indices),
        [None, indices],
        validation_level="none",  # its dictionary, still empty here, is moved in next
    )
    _move_dictionary(na.c_array(list(codes), value_type), encoded)
    return encoded


# Codes joined per this many rows, then the pieces: a join builds a list of all it joins first,
# and one of a whole batch's codes (50,000 pointers) cost the daemon's allocator settings
# (service.daemon._bound_memory) about twice the join itself.
_JOIN_CHUNK = 1024


def _joined(pieces: Iterator[bytes]) -> bytes:
    chunks = []
    while chunk := b"".join(islice(pieces, _JOIN_CHUNK)):
        chunks.append(chunk)
    return b"".join(chunks)


class _ArrowArray(ctypes.Structure):
    """struct ArrowArray of the Arrow C data interface (a stable ABI)."""


_Release = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowArray))
_ArrowArray._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.c_void_p),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.POINTER(_ArrowArray)),
    ("release", _Release),
    ("private_data", ctypes.c_void_p),
]


def _move_dictionary(dictionary: Any, encoded: Any) -> None:
    """Make `dictionary` the dictionary of `encoded` (the C interface's move: the struct is
    copied and the source marked released). nanoarrow 0.9's builders have no way to set one;
    building `encoded` from a dictionary type allocated an empty dictionary array, released
    here before it is overwritten, and released with `encoded` like any of its members."""
    target = _ArrowArray.from_address(encoded._addr()).dictionary.contents
    source = _ArrowArray.from_address(dictionary._addr())
    target.release(ctypes.byref(target))
    ctypes.memmove(ctypes.addressof(target), ctypes.addressof(source), ctypes.sizeof(target))
    source.release = _Release()


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


def from_tuples(rows: Sequence[Sequence[Any]], schema: Schema) -> Any:
    """The same from rows of values in `schema`'s order (what executemany would take)."""
    return table({name: [row[i] for row in rows] for i, name in enumerate(schema)}, schema)
