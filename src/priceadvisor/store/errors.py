"""The store's one error type: a database problem a user can act on."""

from __future__ import annotations


class StoreError(RuntimeError):
    """A database problem a user can act on; the message is one line."""


def first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
