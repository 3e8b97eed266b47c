"""Snapshot tests of the rendered digest: text, HTML and Slack payload from fixed data.

Set UPDATE_SNAPSHOTS=1 to rewrite the snapshots after an intended change, then review the diff.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from priceadvisor.notify.digest import Digest, render

SNAPSHOTS = Path(__file__).parent / "snapshots"


def fixed_digest() -> Digest:
    now = dt.datetime(2026, 11, 23, 8, 0)
    return Digest(
        generated_at=now,
        week_ago=now - dt.timedelta(days=7),
        gpu_prices=[
            {
                "gpu_model": "H100-SXM-80GB",
                "pricing": "on_demand",
                "now_price": 2.29,
                "week_ago": 2.49,
                "change": 2.29 / 2.49 - 1,
                "spark": "█▇▆▆▅▄▃▁",
                "series": [3.1, 3.0, 2.9, 2.9, 2.8, 2.7, 2.49, 2.29],
                "provider": "lambda",
                "region": "global",
                "offers": 96,
                "source_url": "https://lambda.ai/service/gpu-cloud",
                "fetched_at": now - dt.timedelta(minutes=40),
                "price_origin": "published",
            },
            {
                "gpu_model": "L40S-48GB",
                "pricing": "spot",
                "now_price": 0.41,
                "week_ago": None,
                "change": None,
                "spark": "       ▁",
                "series": [None] * 7 + [0.41],
                "provider": "vast",
                "region": "DE",
                "offers": 1,
                "source_url": "https://console.vast.ai/api/v0/bundles/",
                "fetched_at": now - dt.timedelta(minutes=10),
                "price_origin": "published",
            },
        ],
        movers=[
            {
                "provider": "vast",
                "region": "DE",
                "instance_type": "<!channel> x8 & co",
                "gpu_model": "H100-SXM-80GB",
                "pricing": "on_demand",
                "price_origin": "published",
                "source_url": "https://console.vast.ai/api/v0/bundles/",
                "fetched_at": now - dt.timedelta(minutes=10),
                "before": 20.0,
                "now": 16.0,
                "change": -0.2,
            },
            {
                "provider": "oracle",
                "region": "global",
                "instance_type": "BM.GPU.H100.8",
                "gpu_model": "H100-SXM-80GB",
                "pricing": "spot",
                "price_origin": "derived",
                "source_url": None,
                "fetched_at": now - dt.timedelta(hours=5),
                "before": 40.0,
                "now": 44.0,
                "change": 0.1,
            },
        ],
        new_offers=[
            {
                "provider": "aws",
                "gpu_model": "B300-288GB",
                "offers": 2,
                "cheapest": 17.8,
                "regions": ["us-east-1", "us-west-2"],
            }
        ],
        vanished=[
            {"provider": "oracle", "gpu_model": "A10-24GB", "offers": 1, "regions": ["global"]}
        ],
        workloads=[
            {
                "workload": "chat-70b",
                "task": "serve",
                "rank": 1,
                "provider": "runpod",
                "region": "EU-RO-1",
                "instance_type": "NVIDIA H100 80GB HBM3",
                "gpu_model": "H100-SXM-80GB",
                "gpu_count": 2.0,
                "pricing": "on_demand",
                "price_hour_usd": 6.58,
                "cost": 0.412,
                "binding": "bandwidth",
                "tokens_per_s": 1280.0,
                "hours": None,
                "tpot_ms": 22.5,
                "marketplace": False,
                "price_week_ago": 6.98,
                "change": 6.58 / 6.98 - 1,
                "source_url": "https://api.runpod.io/graphql",
                "fetched_at": now - dt.timedelta(minutes=20),
                "price_origin": "published",
                "freshness": "fresh",
            }
        ],
        health=[
            {
                "provider": "azure",
                "state": "fresh",
                "last_success": now,
                "last_error": None,
                "not_rentable": "unknown",
            },
            {
                "provider": "gcp",
                "state": "not configured: set GCP_API_KEY",
                "last_success": None,
                "last_error": None,
                "not_rentable": None,
            },
            {
                "provider": "runpod",
                "state": "fresh",
                "last_success": now,
                "last_error": None,
                "not_rentable": "16/91 (18%)",
            },
        ],
        healthy=True,
        market={"offers": 1234, "providers": 7, "gpu_models": 31},
        reader_gpus=["H100-SXM-80GB"],
        dashboard_url="https://prices.example.com/",
    )


def check(name: str, rendered: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") or not path.exists():
        path.write_text(rendered, encoding="utf-8")
    assert rendered == path.read_text(encoding="utf-8"), f"{name} changed (UPDATE_SNAPSHOTS=1)"


def test_digest_renders_as_its_snapshots() -> None:
    message = render(fixed_digest())
    assert message.key == "digest:2026-W48"
    check("digest.txt", message.text)
    check("digest.html", message.html)
    check("digest.slack.json", json.dumps(message.slack, indent=2, ensure_ascii=False) + "\n")


def test_snapshots_are_committed_not_created_in_ci() -> None:
    for name in ("digest.txt", "digest.html", "digest.slack.json"):
        assert (SNAPSHOTS / name).is_file(), f"missing snapshot {name}"
