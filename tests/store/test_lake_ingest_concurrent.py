"""Concurrent ingests into one lake (PostgreSQL catalog): writers of different providers and
two writers of the same provider (a daemon and a CLI fetch) lose commits to each other; every
ingest is redone until it commits, and the history keeps its invariants."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import stamina

from priceadvisor.manifest import manifest
from priceadvisor.records import FetchResult, RawQuote, RunStatus
from priceadvisor.store import connections, lake, transactions
from priceadvisor.store import ingest as ingest_module
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.history import violations_in

ROUNDS = 4
START = dt.datetime(2026, 11, 1)


@pytest.fixture(autouse=True)
def _real_retries() -> Iterator[None]:
    stamina.set_testing(False)
    yield
    stamina.set_testing(True, attempts=3)


def lambda_quotes(round_: int) -> list[RawQuote]:
    """1-, 2- and 8-GPU H100 nodes in two regions; the price moves every round and the 8-GPU
    node of us-west-1 is missing in odd rounds (an interval closes, then a new one opens)."""
    quotes = []
    for region in ("us-east-1", "us-west-1"):
        for gpus in (1, 2, 8):
            if round_ % 2 and region == "us-west-1" and gpus == 8:
                continue
            quotes.append(
                RawQuote(
                    region=region,
                    instance_type=f"gpu_{gpus}x_h100_sxm5",
                    pricing="on_demand",
                    price=gpus * (2.49 + 0.1 * (round_ % 3)),
                    gpu_name_raw="H100 SXM",
                    gpu_count=float(gpus),
                )
            )
    return quotes


def azure_quotes(round_: int) -> list[RawQuote]:
    skus = ("Standard_NC24ads_A100_v4", "Standard_NC48ads_A100_v4", "Standard_NC96ads_A100_v4")
    return [
        RawQuote(
            region=region, instance_type=sku, pricing="on_demand", price=3.67 * (n + 1) + round_
        )
        for region in ("eastus", "westeurope")
        for n, sku in enumerate(skus)
        if not (round_ % 2 and sku == skus[-1])
    ]


QUOTES = {"lambda": lambda_quotes, "azure": azure_quotes}


def ingest_once(target: lake.Lake, provider: str, round_: int, observed: dt.datetime) -> None:
    with connections.writer(target) as con:
        run_id = transactions.retry_conflicts(start_run)(con, provider)
        result = FetchResult(provider, RunStatus.OK, QUOTES[provider](round_), finished_at=observed)
        transactions.retry_conflicts(ingest)(con, run_id, result, manifest(provider))


def writer_thread(
    target: lake.Lake, provider: str, offset: dt.timedelta, errors: list[str]
) -> None:
    """ROUNDS fetches of `provider`, each observed an hour after the last (plus `offset`)."""
    try:
        for round_ in range(ROUNDS):
            ingest_once(target, provider, round_, START + dt.timedelta(hours=round_) + offset)
    except Exception as exc:
        errors.append(f"{provider}: {exc}")


def test_concurrent_ingests_keep_every_interval(pg_dsn: str, tmp_path: Path) -> None:
    target = lake.Lake(catalog=f"postgres:{pg_dsn}", data_path=str(tmp_path / "data"))
    with connections.writer(target):
        pass
    errors: list[str] = []
    writers = [
        ("lambda", dt.timedelta(0)),
        ("azure", dt.timedelta(0)),
        ("lambda", dt.timedelta(minutes=30)),  # a CLI fetch between the daemon's
    ]
    threads = [
        threading.Thread(target=writer_thread, args=(target, p, offset, errors))
        for p, offset in writers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert errors == []
    with connections.reader(target) as con:
        assert violations_in(con) == dict.fromkeys(violations_in(con), 0)
        runs = con.execute(
            "SELECT provider, status, count(*) FROM core.fetch_runs GROUP BY ALL ORDER BY ALL"
        ).fetchall()
        # each provider: one open interval per offer of its latest run
        open_ = dict(
            con.execute(
                "SELECT provider, count(*) FROM core.price_intervals WHERE valid_to IS NULL "
                "GROUP BY ALL"
            ).fetchall()
        )
    finished = {(p, s): n for p, s, n in runs}
    assert sum(n for (p, _), n in finished.items() if p == "lambda") == 2 * ROUNDS
    assert finished.get(("azure", "ok")) == ROUNDS
    assert open_ == {
        "lambda": len(lambda_quotes(ROUNDS - 1)),
        "azure": len(azure_quotes(ROUNDS - 1)),
    }


def test_an_ingest_that_loses_its_commit_is_redone_on_the_winner_s_rows(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deterministic: while the lambda ingest is inside its transaction, another writer commits
    an azure ingest; lambda's commit conflicts, runs again, and both land once."""
    target = lake.Lake(catalog=f"postgres:{pg_dsn}", data_path=str(tmp_path / "data"))
    with connections.writer(target):
        pass
    real_finish = ingest_module._finish_run
    calls: list[int] = []

    def finish_after_a_rival_commits(*args: Any, **kwargs: Any) -> Any:
        if args[2].provider == "lambda":
            calls.append(1)
            if len(calls) == 1:
                ingest_once(target, "azure", 0, START)
        return real_finish(*args, **kwargs)

    with connections.writer(target) as con:
        run_id = start_run(con, "lambda")
    monkeypatch.setattr(ingest_module, "_finish_run", finish_after_a_rival_commits)
    with connections.writer(target) as con:
        result = FetchResult("lambda", RunStatus.OK, lambda_quotes(0), finished_at=START)
        summary = transactions.retry_conflicts(ingest)(con, run_id, result, manifest("lambda"))
    assert len(calls) == 2  # lost the first commit, redone once
    assert summary.offers_new == len(lambda_quotes(0))
    with connections.reader(target) as con:
        assert violations_in(con) == dict.fromkeys(violations_in(con), 0)
        intervals = con.execute(
            "SELECT provider, count(*) FROM core.price_intervals GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert intervals == [("azure", len(azure_quotes(0))), ("lambda", len(lambda_quotes(0)))]
