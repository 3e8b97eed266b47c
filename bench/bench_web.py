"""Dashboard latency: time to first byte of the Prices page and of a filtered API call.

Usage: python bench/bench_web.py [--quick] [--offers 100000 --offers 1000000] [--requests 20]

Builds a database of N synthetic current offers (bench/gen_snapshot.py, as AWS regions so the
region join is real), serves the dashboard on 127.0.0.1 in a thread exactly as `priceadvisor
serve` does (uvicorn, worker-thread reads, a fresh read-only connection per request), and times
sequential requests from first byte sent to first byte of the body received. --quick: 100k
offers, 10 requests each.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from gen_snapshot import base_quotes
from tests.service.browser import ServerThread

from priceadvisor.manifest import Manifest
from priceadvisor.records import FetchResult, RunStatus
from priceadvisor.service import web
from priceadvisor.service.dashboard import Dashboard
from priceadvisor.store import connections
from priceadvisor.store.handle import Store
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run

MANIFEST = Manifest(
    id="aws",
    name="Synthetic",
    homepage="https://example.invalid",
    interval=900,
    price_basis="gpu",
    endpoints={"prices": "https://example.invalid/prices"},
)
TARGETS = {
    "prices page (/)": "/",
    "filtered page (/?gpu=H100&pricing=spot&eu=1)": "/?gpu=H100&pricing=spot&eu=1",
    "API /api/offers?gpu=H100&pricing=spot&vram_min=80": (
        "/api/offers?gpu=H100&pricing=spot&vram_min=80&per_page=50"
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--offers", type=int, action="append")
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    sizes = args.offers or ([100_000] if args.quick else [100_000, 1_000_000])
    requests = 10 if args.quick else args.requests
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "bench.duckdb"
            build(db, size)
            measure(db, size, requests)


def build(db: Path, offers: int) -> None:
    started = time.perf_counter()
    quotes = base_quotes(offers, seed=7)
    with connections.writer(db) as con:
        run_id = start_run(con, "aws")
        result = FetchResult("aws", RunStatus.OK, quotes, finished_at=dt.datetime(2026, 11, 1))
        summary = ingest(con, run_id, result, MANIFEST)
    print(f"{summary.offers_new} offers ingested in {time.perf_counter() - started:.1f} s")


def measure(db: Path, offers: int, requests: int) -> None:
    app = web.build_app(Dashboard(Store(db), "bench").routes())
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        for label, path in TARGETS.items():
            http.get(path).raise_for_status()  # warm: first open of the file, template compile
            times = [first_byte(http, path) for _ in range(requests)]
            print(
                f"{offers:>9,} offers  {label:<52} first byte median "
                f"{statistics.median(times) * 1000:6.1f} ms, max {max(times) * 1000:6.1f} ms"
            )


def first_byte(http: httpx.Client, path: str) -> float:
    started = time.perf_counter()
    with http.stream("GET", path) as response:
        response.raise_for_status()
        chunks = response.iter_raw()
        next(chunks)
        elapsed = time.perf_counter() - started
        for _ in chunks:
            pass
    return elapsed


if __name__ == "__main__":
    main()
