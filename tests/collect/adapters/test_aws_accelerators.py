"""AWS Trainium and Inferentia: "Machine Learning ASIC Instances" rows with no GPU column, priced
per accelerator chip, never shown or sized as GPUs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from priceadvisor import llm
from priceadvisor.cli.app import main
from priceadvisor.collect.adapters.aws import parse_advisor, parse_ondemand, parse_spot
from priceadvisor.gpu_specs import gpu_catalog
from priceadvisor.manifest import manifest
from priceadvisor.resources import recordings_dir
from priceadvisor.service import web
from priceadvisor.service.dashboard import Dashboard
from priceadvisor.sizing.advisor import size_offer
from priceadvisor.sizing.estimate import SizingError, Workload, estimate
from priceadvisor.store.handle import Store
from tests.conftest import query
from tests.localserver import fetch_served
from tests.service.browser import ServerThread

FOLDER = recordings_dir() / "aws"
KNOWN = manifest("aws").instance_types
ACCELERATOR_TYPES = {
    "trn1.2xlarge": ("TRN1-32GB", 1),
    "trn1.32xlarge": ("TRN1-32GB", 16),
    "trn1n.32xlarge": ("TRN1-32GB", 16),
    "trn2.48xlarge": ("TRN2-96GB", 16),
    "inf2.xlarge": ("INF2-32GB", 1),
    "inf2.8xlarge": ("INF2-32GB", 1),
    "inf2.24xlarge": ("INF2-32GB", 6),
    "inf2.48xlarge": ("INF2-32GB", 12),
}


def load(name: str) -> Any:
    return json.loads((FOLDER / name).read_text())


def test_manifest_counts_accelerator_chips_per_instance() -> None:
    assert {t: (KNOWN[t].gpu, KNOWN[t].gpus) for t in ACCELERATOR_TYPES} == ACCELERATOR_TYPES
    assert KNOWN["trn2.48xlarge"].ram_gb == 2048 and KNOWN["inf2.48xlarge"].vcpus == 192


def test_asic_rows_are_kept_by_family_even_when_the_type_is_unknown() -> None:
    document = load("ondemand-us-east-1.json")
    rows = {r["Instance Type"]: r for r in parse_ondemand(document, "US East (N. Virginia)", {})}
    # with no instance-type table at all, the family alone keeps them (doctor lists them)
    assert {"trn1.2xlarge", "trn1.32xlarge", "inf2.48xlarge"} <= set(rows)
    assert rows["trn1.2xlarge"]["price"] == "1.3437500000"
    assert "c6a.12xlarge" not in rows


def test_a_type_in_the_table_is_kept_whatever_family_the_row_names() -> None:
    document = load("ondemand-us-east-2.json")
    location = "US East (Ohio)"
    for row in document["regions"][location].values():
        if row["Instance Type"] == "trn1.32xlarge":
            row["Instance Family"] = "Accelerated Computing"  # a relabelled family
    kept = {r["Instance Type"] for r in parse_ondemand(document, location, KNOWN)}
    assert kept == {"trn1.32xlarge"}


def test_spot_sizes_of_known_accelerator_types_are_kept_in_any_group() -> None:
    size = {"size": "inf2.xlarge", "valueColumns": [{"name": "linux", "prices": {"USD": "0.23"}}]}
    group = {"type": "generalCurrentGen", "sizes": [size]}
    feed = {"config": {"regions": [{"region": "eu-central-1", "instanceTypes": [group]}]}}
    assert parse_spot(json.dumps(feed).encode(), KNOWN) == [("eu-central-1", "inf2.xlarge", 0.23)]
    # the advisor's real buckets for these types (complete advisor file, 2025-06)
    rates = parse_advisor(load("spot-advisor-data.json"))
    assert rates["eu-central-1"]["inf2.xlarge"] == 0.025  # "<5%"
    assert rates["us-west-2"]["trn1n.32xlarge"] == 0.19  # "15-20%"
    assert "trn2.48xlarge" not in rates["us-east-1"]  # the advisor rates trn2 nowhere


def test_catalog_accelerators_are_chips_with_published_figures() -> None:
    catalog = gpu_catalog()
    trn1, trn2, inf2 = (catalog.gpus[i] for i in ("TRN1-32GB", "TRN2-96GB", "INF2-32GB"))
    assert {g.kind for g in (trn1, trn2, inf2)} == {"accelerator"}
    assert (trn2.memory_gb, trn2.specs["bf16_dense_tflops"], trn2.specs["fp8_dense_tflops"]) == (
        96,
        667,
        1299,
    )
    assert (trn1.memory_gb, trn1.specs["memory_bandwidth_gbs"]) == (32, 820)
    assert inf2.specs["bf16_dense_tflops"] == 190 and inf2.specs["tdp_w"] is None
    assert catalog.gpus["H100-SXM-80GB"].kind == "gpu"
    assert catalog.resolve("AWS Trainium2") == "TRN2-96GB"
    assert catalog.resolve("Trainium") == "TRN1-32GB"
    assert catalog.resolve("Inferentia2") == "INF2-32GB"


def test_estimate_refuses_accelerators_without_a_sizing_basis() -> None:
    work = Workload("serve", llm.from_numbers("small", params_b=1.0))
    with pytest.raises(SizingError, match=r"TRN2-96GB .*cannot be sized: no published"):
        estimate(work, "TRN2-96GB", 16)
    assert estimate(work, "H100-SXM-80GB", 1).fits
    # advise skips their offers rather than ranking them on GPU priors
    assert size_offer(work, None, "INF2-32GB", 1) is None
    assert size_offer(work, None, "H100-SXM-80GB", 1) is not None


def test_offline_offers_per_accelerator_hour(db_path: Path) -> None:
    summary, _server = fetch_served("aws", db_path)
    assert summary.unmapped == 0
    found = query(
        db_path,
        """SELECT instance_type, gpu_model, gpu_count, gpu_memory_gb, price_hour_usd,
                  price_gpu_hour_usd
           FROM offers WHERE region = 'us-east-1' AND pricing = 'on_demand'
             AND gpu_model IN ('TRN1-32GB', 'INF2-32GB') ORDER BY instance_type""",
    )
    by_type = {row[0]: row[1:] for row in found}
    assert by_type["trn1.32xlarge"] == ("TRN1-32GB", 16, 32, 21.5, pytest.approx(21.5 / 16))
    assert by_type["inf2.48xlarge"][:3] == ("INF2-32GB", 12, 32)
    assert set(by_type) == {t for t in ACCELERATOR_TYPES if t != "trn2.48xlarge"}
    [(kind,)] = query(db_path, "SELECT kind FROM gpus WHERE gpu_model = 'TRN2-96GB'")
    assert kind == "accelerator"


def test_prices_say_accelerator_never_gpu(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fetch_served("aws", db_path)
    with pytest.raises(SystemExit):
        main(["--db", str(db_path), "prices", "--gpu", "TRN1", "--wide"])
    table = capsys.readouterr().out
    assert "trn1.32xlarge" in table and "TRN1-32GB" in table
    assert "GPU" not in table and "$/accel-h" in table and "accelerator" in table
    with pytest.raises(SystemExit):
        main(["--db", str(db_path), "prices", "--gpu", "H100", "--limit", "3"])
    gpus = capsys.readouterr().out
    assert "$/GPU-h" in gpus and "accel" not in gpus
    with pytest.raises(SystemExit):
        main(["--db", str(db_path), "prices", "--provider", "aws", "--limit", "400"])
    mixed = capsys.readouterr().out
    assert "$/device-h" in mixed and "GPU and accelerator offers" in mixed


def test_dashboard_says_accelerator_on_their_pages(db_path: Path) -> None:
    fetch_served("aws", db_path)
    app = web.build_app(Dashboard(Store(db_path), "test").routes())
    with ServerThread(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        trn2 = http.get("/gpu/TRN1-32GB").text
        h100 = http.get("/gpu/H100-SXM-80GB").text
        listing = http.get("/", params={"provider": "aws", "gpu": "INF2-32GB"}).text
    assert "/accelerator-hour" in trn2 and "Accelerators" in trn2
    assert "GPU-hour" not in trn2 and ">GPUs<" not in trn2
    assert "/GPU-hour" in h100 and "/accelerator-hour" not in h100
    assert "/accelerator-hour" in listing


def test_a_catalog_entry_missing_a_rate_is_refused_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    l4 = gpu_catalog().gpus["L4-24GB"]
    gap = dataclasses.replace(l4, id="GAP", specs=dict(l4.specs, memory_bandwidth_gbs=None))
    monkeypatch.setitem(gpu_catalog().gpus, "GAP", gap)
    work = Workload("serve", llm.from_numbers("small", params_b=1.0))
    with pytest.raises(SizingError, match="GAP cannot be sized: the catalog has no memory"):
        estimate(work, "GAP", 1)
    assert size_offer(work, None, "GAP", 1) is None  # advise skips it
