"""Every adapter is registered, has a manifest, recordings and its own tests."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from priceadvisor.collect import adapters as adapters_package
from priceadvisor.collect.adapters import REGISTRY
from priceadvisor.collect.adapters.base import Adapter
from priceadvisor.manifest import manifest, manifest_ids
from priceadvisor.resources import recordings_dir

TESTS = Path(__file__).parent


def test_registry_and_manifests_match_one_to_one() -> None:
    assert sorted(REGISTRY) == manifest_ids()


def test_every_adapter_module_is_registered() -> None:
    """A module dropped into collect/adapters/ but left out of the registry never runs."""
    folder = Path(adapters_package.__file__).parent
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "base"}
    registered = {cls.__module__.rsplit(".", 1)[-1] for cls in REGISTRY.values()}
    assert modules == registered


@pytest.mark.parametrize("provider_id", sorted(REGISTRY))
def test_adapter_is_complete(provider_id: str) -> None:
    cls = REGISTRY[provider_id]
    assert issubclass(cls, Adapter) and cls.id == provider_id
    spec = manifest(provider_id)
    assert spec.endpoints and all(u.startswith("https://") for u in spec.endpoints.values())
    assert spec.credential_env or not spec.credential_required
    index = recordings_dir() / provider_id / "recordings.toml"
    assert index.is_file(), f"{provider_id} has no recordings"
    entries = tomllib.loads(index.read_text())["response"]
    for entry in entries:
        assert entry["endpoint"] in spec.endpoints
        assert (index.parent / entry["file"]).is_file()
    assert (index.parent / "README.md").is_file(), "recordings need a provenance note"
    assert (TESTS / f"test_{provider_id}.py").is_file(), f"{provider_id} has no test module"
    module = (TESTS / f"test_{provider_id}.py").read_text()
    assert module.count("def test_") >= 5
