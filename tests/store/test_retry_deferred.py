"""`transactions.retry_on` imports stamina only when a call first fails in a way it retries,
and from there stamina behaves as if it had run every attempt: the same attempts, the same
retry details for its hooks (what it logs and counts), the same error at the end."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import duckdb
import pytest
import stamina
from stamina.instrumentation import RetryDetails, get_on_retry_hooks, set_on_retry_hooks

from priceadvisor.store import transactions

CONFLICT = duckdb.TransactionException("Transaction conflict: cannot update a table")


@pytest.fixture
def retries() -> Iterator[list[RetryDetails]]:
    """Every retry stamina schedules, as its hooks see it."""
    seen: list[RetryDetails] = []
    hooks = get_on_retry_hooks()
    set_on_retry_hooks([seen.append])
    yield seen
    set_on_retry_hooks(hooks)


def failing(times: int, calls: list[tuple[Any, ...]]) -> Callable[..., str]:
    """A unit of work that loses its commit `times` times, then commits."""

    def store(name: str, *, rows: int) -> str:
        calls.append((name, rows))
        if len(calls) <= times:
            raise CONFLICT
        return f"{name}: {rows}"

    return store


def run_both(times: int, retries: list[RetryDetails]) -> list[tuple[Any, ...]]:
    """What happens under `retry_on` and under stamina.retry itself (how it was before): the
    calls made, the result or error, and the retry details, for each."""
    found = []
    for wrap in (
        transactions.retry_on(transactions.is_conflict, 5),
        stamina.retry(on=transactions.is_conflict, attempts=5, wait_initial=0.1, wait_max=5.0),
    ):
        calls: list[tuple[Any, ...]] = []
        retries.clear()
        try:
            outcome: object = wrap(failing(times, calls))("advice", rows=7)
        except duckdb.TransactionException as exc:
            outcome = exc
        details = [(d.name, d.retry_num, d.caused_by, d.args, d.kwargs) for d in retries]
        found.append((calls, outcome, details))
    return found


@pytest.mark.parametrize("times", [0, 1, 2, 3, 10])
def test_retries_are_those_stamina_makes_itself(times: int, retries: list[RetryDetails]) -> None:
    deferred, itself = run_both(times, retries)
    assert deferred == itself
    calls, _, details = deferred
    assert len(calls) == min(times + 1, 3)  # the tests' stamina mode caps attempts at 3
    assert [d[1] for d in details] == list(range(1, len(calls)))
    assert all(d[0].endswith("failing.<locals>.store") for d in details)


def test_stamina_inactive_runs_once(retries: list[RetryDetails]) -> None:
    stamina.set_active(False)
    try:
        deferred, itself = run_both(2, retries)
    finally:
        stamina.set_active(True)
    assert deferred == itself
    assert len(deferred[0]) == 1 and deferred[1] is CONFLICT


def test_other_errors_are_not_retried() -> None:
    calls = []

    @transactions.retry_conflicts
    def work() -> None:
        calls.append(1)
        raise ValueError("not a lost commit")

    with pytest.raises(ValueError, match="not a lost commit"):
        work()
    assert calls == [1]


def test_a_first_attempt_past_the_timeout_is_not_retried() -> None:
    calls = []

    @transactions.retry_on(transactions.is_conflict, 5, timeout=1e-9)
    def work() -> None:
        calls.append(1)
        time.sleep(0.001)  # the attempt outlasts the 1 ns timeout
        raise CONFLICT

    with pytest.raises(duckdb.TransactionException):
        work()
    assert calls == [1]


SCRIPT = """
import sys
from priceadvisor.store import transactions

@transactions.retry_conflicts
def commits():
    return "ok"

@transactions.retry_conflicts
def fails():
    raise ValueError("no conflict")

assert commits() == "ok"
try:
    fails()
except ValueError:
    pass
print("stamina" in sys.modules, "tenacity" in sys.modules)
"""


def test_calls_that_do_not_conflict_do_not_import_stamina() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "False"]
