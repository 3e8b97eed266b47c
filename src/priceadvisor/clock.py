"""The clock every stored timestamp is read from."""

from __future__ import annotations

import datetime as dt


def utcnow() -> dt.datetime:
    """Naive UTC now: every timestamp in the database is UTC without a zone (docs/sql.md)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)
