"""Alert evaluation at scale: every rule kind over >= 100,000 current offers, inside the daemon's
DuckDB memory limit (128 MB, one thread), with the peak RSS of the evaluating process.

    python3 -m uv run python bench/bench_alerts.py [--offers 100000] [--providers 4] [--quick]

Data: synthetic snapshots (bench/gen_snapshot.py: 36 regions x 25 GPU spellings x counts x
flavours x pricing) ingested for several providers into a real DuckDB file, plus three failed
runs of one provider. Rules: new_offer (every GPU model, one series per GPU x provider x region),
price_drop for three GPU models, cheaper for one workload (advice ranked from the offers) and
provider_failing. Three evaluations, each after an ingest done in a separate process (so the
evaluating process's RSS is evaluation only): the first seeds every series; then held-back
regions appear and prices drop by 25 %, twice, so new_offer fires and price_drop fires after
its `for_fetches = 2`. --quick: 20,000 offers.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import duckdb
from gen_snapshot import base_quotes

from priceadvisor.config import AlertRule, AlertSettings, WorkloadProfile
from priceadvisor.manifest import Manifest
from priceadvisor.notify import alerts
from priceadvisor.records import FetchResult, RawQuote, RunStatus, utcnow
from priceadvisor.sizing.advisor import store_advice
from priceadvisor.store import connections
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run

PROVIDERS = ["aws", "azure", "gcp", "oracle", "lambda", "runpod"]
HELD_BACK = 3  # regions per provider that appear only after the first evaluation
RULES = AlertSettings(
    rules=[
        AlertRule(kind="new_offer"),
        *(AlertRule(kind="price_drop", gpu_model=g) for g in ("H100-SXM-80GB", "L4", "T4")),
        AlertRule(kind="cheaper", workload="chat"),
        AlertRule(kind="provider_failing"),
    ],
    for_fetches=2,
)
WORKLOAD = WorkloadProfile(name="chat", task="serve", model="llama-3.1-8b")


def snapshot(provider: int, offers: int, rounds: int) -> list[RawQuote]:
    """The provider's quotes at this round: held-back regions from round 1, 25 % cheaper."""
    quotes = base_quotes(offers, seed=provider + 1)
    regions = sorted({q.region for q in quotes})
    if rounds == 0:
        return [q for q in quotes if q.region not in regions[-HELD_BACK:]]
    return [dataclasses.replace(q, price=round((q.price or 1) * 0.75, 4)) for q in quotes]


def ingest_round(db: Path, offers: int, providers: int, rounds: int) -> None:
    """One fetch of every provider (run in a child process), then the advice ranking."""
    with connections.writer(db) as con:
        for i, provider in enumerate(PROVIDERS[:providers]):
            result = FetchResult(
                provider,
                RunStatus.OK,
                snapshot(i, offers // providers, rounds),
                finished_at=utcnow(),
            )
            ingest(con, start_run(con, provider), result, manifest_for(provider))
        if rounds == 0:
            fail_runs(con, PROVIDERS[providers])
        store_advice(con, [WORKLOAD])


def fail_runs(con: duckdb.DuckDBPyConnection, provider: str) -> None:
    for _ in range(RULES.failing_after):
        failed = FetchResult(provider, RunStatus.FAILED, [], error="HTTP 500", finished_at=utcnow())
        ingest(con, start_run(con, provider), failed, manifest_for(provider))


def manifest_for(provider: str) -> Manifest:
    return Manifest(
        id=provider,
        name=provider,
        homepage="https://example.invalid",
        interval=900,
        price_basis="gpu",
        endpoints={"prices": "https://example.invalid/prices"},
    )


def in_child(db: Path, offers: int, providers: int, rounds: int) -> None:
    child = multiprocessing.get_context("spawn").Process(
        target=ingest_round, args=(db, offers, providers, rounds)
    )
    child.start()
    child.join()
    if child.exitcode != 0:
        raise SystemExit(f"ingest round {rounds} failed")


def evaluate(db: Path) -> tuple[float, int, int, int]:
    """(seconds, offers, series, notifications queued) of one evaluation, as the daemon runs it."""
    with connections.writer(db) as con:
        started = time.perf_counter()
        queued = alerts.evaluate_and_queue(con, RULES, ["email", "slack"], utcnow())
        elapsed = time.perf_counter() - started
        offers = con.execute("SELECT count(*) FROM offers").fetchone()
        series = con.execute("SELECT count(*) FROM core.alert_state").fetchone()
    return elapsed, int(offers[0] if offers else 0), int(series[0] if series else 0), queued


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=100_000)
    parser.add_argument("--providers", type=int, default=4, choices=range(1, len(PROVIDERS)))
    parser.add_argument("--quick", action="store_true", help="20,000 offers")
    args = parser.parse_args()
    offers = 20_000 if args.quick else args.offers
    # The daemon's bounds (service.daemon._bound_memory): DuckDB gets 128 MB and one thread.
    connections.CONNECTION_CONFIG.update(
        {"memory_limit": "128MB", "allocator_flush_threshold": "4MB", "threads": 1}
    )
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        print(f"RSS after imports {rss_mb():.0f} MB; DuckDB memory_limit 128MB, 1 thread")
        for rounds in range(3):
            in_child(db, offers, args.providers, rounds)
            seconds, current, series, queued = evaluate(db)
            print(
                f"evaluation {rounds}: {current} offers, {series} alert series, "
                f"{queued} notifications queued in {seconds:.3f} s; peak RSS {rss_mb():.0f} MB"
            )


if __name__ == "__main__":
    main()
