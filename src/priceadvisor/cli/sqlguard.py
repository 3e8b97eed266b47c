"""What the `sql` command lets through: one plain query, or EXPLAIN [ANALYZE] of one.

This is the first of two fences. The second is the reader connection itself
(store.connections.reader), which DuckDB seals against files, network, extensions and settings;
so a statement that passes here still cannot write or fetch anything. This check gives the
clear refusal, and keeps EXPLAIN ANALYZE (which runs its statement) to queries.
"""

from __future__ import annotations

import re

import duckdb

from priceadvisor.cli.common import UserError

_WORD = re.compile(rb"\w+")


def check_read_only(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Raise UserError (exit 1, like any SQL that cannot run: README "Using it") unless
    `query` is exactly one SELECT or an EXPLAIN of one."""
    kind = _single_statement_kind(con, query)
    if kind == "EXPLAIN":
        kind = _single_statement_kind(con, _explained(query))
        if kind != "SELECT":
            raise UserError(f"refused: EXPLAIN is allowed of a query only, not of {kind}")
    elif kind != "SELECT":
        raise UserError(f"refused: only read queries are allowed here, not {kind}")


def _single_statement_kind(con: duckdb.DuckDBPyConnection, query: str) -> str:
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise UserError(f"SQL error: {_one_line(exc)}") from None
    if len(statements) != 1:
        raise UserError(f"refused: give exactly one SQL statement (got {len(statements)})")
    return statements[0].type.name


def _explained(query: str) -> str:
    """The statement after EXPLAIN, its ANALYZE and its option list such as (FORMAT json).
    DuckDB's tokenizer gives byte offsets, so the walk is over the UTF-8 bytes."""
    text = query.encode("utf-8")
    tokens = duckdb.tokenize(query)[1:]
    depth = 0
    for index, (position, kind) in enumerate(tokens):
        char = text[position : position + 1]
        if depth:
            depth += {b"(": 1, b")": -1}.get(char, 0) if _is_operator(kind) else 0
        elif _is_operator(kind) and char == b"(" and _options_follow(tokens, index):
            depth = 1
        elif not _is_word(text, position, b"ANALYZE"):
            return text[position:].decode("utf-8")
    return ""


def _options_follow(tokens: list[tuple[int, duckdb.token_type]], index: int) -> bool:
    """`(FORMAT json)` opens with an option name; a parenthesised query with a keyword."""
    return index + 1 < len(tokens) and tokens[index + 1][1] == duckdb.token_type.identifier


def _is_operator(kind: duckdb.token_type) -> bool:
    return kind == duckdb.token_type.operator


def _is_word(text: bytes, position: int, word: bytes) -> bool:
    found = _WORD.match(text, position)
    return found is not None and found.group().upper() == word


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
