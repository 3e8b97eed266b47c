from __future__ import annotations

import pytest

from priceadvisor.gpu_specs import gpu_catalog, normalise_name, region_catalog
from priceadvisor.manifest import manifest, manifest_ids


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", "H100-SXM-80GB"),
        ("H100 SXM", "H100-SXM-80GB"),
        ("A100-SXM4-80GB", "A100-SXM-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-SXM-40GB"),
        ("Nvidia Tesla A100", "A100-SXM-40GB"),  # GCP's A2 standard GPU is the 40 GB part
        ("H100 (80 GB SXM5)", "H100-SXM-80GB"),
        ("NVIDIA HGX H100", "H100-SXM-80GB"),
        ("H100 PCIe", "H100-PCIE-80GB"),
        ("NVIDIA H100 NVL", "H100-NVL-94GB"),
        ("nvidia-a100-80gb", "A100-SXM-80GB"),
        ("NVIDIA A100 80GB PCIe", "A100-PCIE-80GB"),
        ("A100 (40 GB PCIe)", "A100-PCIE-40GB"),
        ("nvidia-h100-mega-80gb", "H100-SXM-80GB"),
        ("H200", "H200-141GB"),
        ("NVIDIA H200 NVL", "H200-NVL-141GB"),
        ("NVIDIA B300 SXM6 AC", "B300-288GB"),
        ("AMD Instinct MI300X OAM", "MI300X-192GB"),
        ("RTX 4090", "RTX4090-24GB"),
        ("NVIDIA GeForce RTX 4090", "RTX4090-24GB"),
        ("RTX A6000", "RTXA6000-48GB"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX6000ADA-48GB"),
        ("L40S", "L40S-48GB"),
        ("NVIDIA L40", "L40-48GB"),
        ("NVIDIA L4", "L4-24GB"),
        ("Tesla T4", "T4-16GB"),
        ("Tesla V100-SXM2-16GB", "V100-SXM-16GB"),
        ("A10G", "A10G-24GB"),
        ("NVIDIA A10", "A10-24GB"),
        ("H100-SXM-80GB", "H100-SXM-80GB"),  # canonical ids resolve to themselves
        ("NVIDIA RTX PRO 6000", "RTXPRO6000-96GB"),  # every edition: the same 96 GB GB202
        ("RTX PRO 6000 WS", "RTXPRO6000-96GB"),
        ("NVIDIA Quadro RTX 6000", "QUADRORTX6000-24GB"),
        ("NVIDIA GeForce RTX 3070", "RTX3070-8GB"),
        ("Tesla M60", "M60-8GB"),
        ("Nvidia Tesla P4", "P4-8GB"),
    ],
)
def test_resolves_provider_spellings(raw: str, expected: str) -> None:
    assert gpu_catalog().resolve(raw) == expected


@pytest.mark.parametrize("raw", ["RTX PRO 5000", "V100S", "Tesla P40", "", "RTX 6000", "A100 24GB"])
def test_unknown_or_ambiguous_names_stay_unmapped(raw: str) -> None:
    assert gpu_catalog().resolve(raw) is None


def test_memory_hint_separates_variants() -> None:
    catalog = gpu_catalog()
    assert catalog.resolve("A100", memory_gb=81559 / 1024) == "A100-SXM-80GB"  # Vast reports MB
    assert catalog.resolve("H100", memory_gb=94) == "H100-NVL-94GB"
    assert catalog.resolve("A100", memory_gb=40) == "A100-SXM-40GB"


def test_normalise_name_folds_punctuation_and_case() -> None:
    assert normalise_name("nvidia_a100-sxm4 (80 GB)") == "NVIDIA A100 SXM4 80 GB"


def test_catalog_covers_reference_specs_with_dense_rates() -> None:
    gpus = gpu_catalog().gpus
    assert len(gpus) >= 42
    h100 = gpus["H100-SXM-80GB"]
    # dense BF16 is half the 1979 TFLOPS sparsity headline
    assert h100.specs["bf16_dense_tflops"] == 989
    assert h100.memory_gb == 80
    assert h100.specs["memory_bandwidth_gbs"] == 3350
    every_family = {g.family for g in gpus.values()}
    assert all(sum(g.default for g in gpus.values() if g.family == f) == 1 for f in every_family)


def test_regions_know_place_and_eu_membership() -> None:
    regions = region_catalog()
    assert regions["azure", "westeurope"].country == "NL"
    assert regions["azure", "westeurope"].is_eu is True
    assert regions["aws", "eu-west-2"].is_eu is False  # London: Europe, not EU
    assert regions["aws", "eu-west-2"].continent == "EU"
    assert regions["gcp", "us-central1"].continent == "NA"
    assert regions["vast", "DE"].country_name == "Germany"
    for provider in ("aws", "azure", "gcp", "oracle", "lambda", "runpod", "coreweave", "vast"):
        assert any(key[0] == provider for key in regions), provider


def test_every_manifest_instance_type_maps_into_the_catalog() -> None:
    gpus = gpu_catalog().gpus
    for provider_id in manifest_ids():
        spec = manifest(provider_id)
        for name, hardware in spec.instance_types.items():
            assert hardware.gpu is None or hardware.gpu in gpus, f"{provider_id}:{name}"
        for raw, gpu in spec.gpu_names.items():
            assert gpu in gpus, f"{provider_id}: {raw}"
