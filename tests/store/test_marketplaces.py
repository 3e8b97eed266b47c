"""Which offers come from a marketplace (individual hosts, no SLA) is each manifest's `[hosts]`,
not a list in the code: advice marks those offers and keeps `sla = true` workloads off them."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from priceadvisor.manifest import Hosts
from priceadvisor.store import reads
from tests.conftest import query

PROVIDERS = ["vast", "runpod", "tensordock", "lium", "gpuai", "lambda"]


@pytest.fixture(scope="module")
def offline_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from priceadvisor.cli.app import main

    db = tmp_path_factory.mktemp("hosts") / "offline.duckdb"
    args = [a for p in PROVIDERS for a in ("--provider", p)]
    with pytest.raises(SystemExit) as done:
        main(["--db", str(db), "fetch", "--offline", *args])
    assert done.value.code in (0, None)
    return db


def marked(db: Path) -> dict[tuple[str, bool], int]:
    rows = query(
        db, f"SELECT provider, {reads.no_sla('o')}, count(*) FROM offers AS o GROUP BY 1, 2"
    )
    return {(provider, flag): n for provider, flag, n in rows}


def test_every_offer_of_a_marketplace_and_only_those_is_marked(offline_db: Path) -> None:
    counts = marked(offline_db)
    for provider in ("vast", "tensordock", "lium"):  # hosts are individual sellers
        assert counts.get((provider, True), 0) > 0 and (provider, False) not in counts
    assert counts.get(("lambda", False), 0) > 0 and ("lambda", True) not in counts


def test_a_mixed_source_marks_its_marketplace_part_only(offline_db: Path) -> None:
    counts = marked(offline_db)
    assert counts[("runpod", True)] > 0 and counts[("runpod", False)] > 0
    runpod = "SELECT DISTINCT region FROM offers AS o WHERE provider = 'runpod' AND "
    runpod += reads.no_sla("o")
    community = query(offline_db, runpod)
    assert community == [("community",)]
    words = query(
        offline_db,
        f"SELECT instance_type, {reads.no_sla('o')} FROM offers AS o WHERE provider = 'gpuai'",
    )
    assert words and all(flag == ("community" in name.split()) for name, flag in words)


@pytest.mark.parametrize(
    ("hosts", "message"),
    [
        ({"marketplace": "some", "source": "https://example.com"}, "needs regions"),
        ({"marketplace": "all"}, "needs the source"),
        ({"marketplace": "maybe", "source": "https://example.com"}, "marketplace"),
    ],
)
def test_a_marketplace_is_scoped_and_sourced(hosts: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Hosts.model_validate(hosts)
