"""What every web route that reads the store shares (the dashboard's, OpenCost's, the server's
error handler): the wait for the writer's turn and the error for a query value it cannot use.
Its own module so that a daemon without the dashboard (`[daemon] dashboard = false`) serves
/healthz, /metrics and OpenCost without importing the dashboard's routes."""

from __future__ import annotations

# A page waits at most this long for the writer's turn; past it the reader gets 503, not a hang.
READ_LOCK_TIMEOUT = 5.0


class BadQuery(ValueError):
    """A query-string value the dashboard cannot use; answered with 400 and this message."""
