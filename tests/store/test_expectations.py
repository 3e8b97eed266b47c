"""Per-provider integrity expectations (store/expectations.py, manifests' `[expect]`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from priceadvisor.collect.adapters.runpod import parse_gpu_prices
from priceadvisor.manifest import Expectations, Manifest, manifest
from priceadvisor.records import FetchResult, IngestSummary, RunStatus, utcnow
from priceadvisor.resources import recordings_dir
from priceadvisor.store import connections as store
from priceadvisor.store.ingest import ingest
from priceadvisor.store.runs import start_run
from tests.conftest import query

RUNPOD = recordings_dir() / "runpod" / "gputypes.json"


def price_list(edit: Any = None) -> list[Any]:
    document = json.loads(RUNPOD.read_text())
    for gpu in document["data"]["gpuTypes"]:
        if edit:
            edit(gpu)
    return parse_gpu_prices(document, "u")


def run(db: Path, quotes: list[Any], spec: Manifest | None = None) -> IngestSummary:
    with store.writer(db) as con:
        run_id = start_run(con, "runpod")
        result = FetchResult("runpod", RunStatus.OK, quotes, finished_at=utcnow())
        return ingest(con, run_id, result, spec or manifest("runpod"))


def no_community(gpu: dict[str, Any]) -> None:
    gpu.update(communityPrice=0, communitySpotPrice=0, communityCloud=False)


def test_the_recorded_snapshot_meets_the_runpod_expectations(tmp_path: Path) -> None:
    assert manifest("runpod").expect.regions == ["secure", "community"]
    assert run(tmp_path / "a.duckdb", price_list()).status is RunStatus.OK


def test_a_snapshot_missing_a_cloud_is_partial_and_closes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    run(db, price_list())
    summary = run(db, price_list(no_community))
    assert summary.status is RunStatus.PARTIAL and summary.offers_closed == 0
    assert "no region community" in (summary.error or "")
    [(community,)] = query(db, "SELECT count(*) FROM offers WHERE region = 'community'")
    assert community == 12  # kept, not closed
    [(error,)] = query(db, "SELECT error FROM fetch_runs ORDER BY run_id DESC LIMIT 1")
    assert "expectations" in error


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        (Expectations(min_offers=50), "only 22 offers (expected at least 50)"),
        (Expectations(gpus=["H100-SXM-80GB", "GB200-186GB"]), "no GPU GB200-186GB"),
        (Expectations(pricing=["on_demand", "spot", "market"]), "no pricing market"),
    ],
)
def test_each_kind_of_expectation_is_checked(
    tmp_path: Path, expect: Expectations, message: str
) -> None:
    spec = manifest("runpod").model_copy(update={"expect": expect})
    summary = run(tmp_path / "a.duckdb", price_list(), spec)
    assert summary.status is RunStatus.PARTIAL and message in (summary.error or "")


def test_manifests_with_expectations_meet_them_on_their_recordings() -> None:
    """Every stated expectation names catalog GPUs; the recordings meet them (test_offline_all
    fetches every recording and requires `ok`)."""
    from priceadvisor.gpu_specs import gpu_catalog
    from priceadvisor.manifest import manifest_ids

    stated = [manifest(p) for p in manifest_ids() if manifest(p).expect != Expectations()]
    assert len(stated) >= 4
    assert all(g in gpu_catalog().gpus for m in stated for g in m.expect.gpus)
