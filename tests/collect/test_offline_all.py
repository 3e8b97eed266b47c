"""The whole wave of providers offline, as `priceadvisor fetch --offline` runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from priceadvisor.cli.app import main
from priceadvisor.collect.adapters import REGISTRY
from priceadvisor.manifest import manifest
from tests.conftest import query

# Providers disabled by default (built from documentation, no recorded response yet) are not in
# the default offline cycle; their own tests fetch them.
PRICE_PROVIDERS = sorted(
    p for p in REGISTRY if manifest(p).kind == "prices" and manifest(p).enabled_by_default
)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("offline") / "all.duckdb"
    with pytest.raises(SystemExit) as done:
        main(["--db", str(db), "fetch", "--offline", "--format", "json"])
    assert done.value.code in (0, None)
    return db


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    return query(db, sql)


def test_every_price_provider_has_current_offers(database: Path) -> None:
    counts = dict(rows(database, "SELECT provider, count(*) FROM offers GROUP BY 1"))
    assert set(counts) == set(PRICE_PROVIDERS)
    assert all(n > 0 for n in counts.values())
    statuses = rows(database, "SELECT DISTINCT status FROM fetch_runs")
    assert statuses == [("ok",)]


def test_at_least_95_percent_of_offers_map_to_a_canonical_gpu(database: Path) -> None:
    [(mapped, total)] = rows(database, "SELECT count(gpu_model), count(*) FROM offers")
    assert mapped / total >= 0.95


def test_doctor_on_the_offline_demo_lists_no_unmapped_names(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--db", str(database), "doctor", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    listed = {(u["provider"], u["gpu_name_raw"]) for u in report["unmapped"]}
    expected = set(
        rows(database, "SELECT DISTINCT provider, gpu_name_raw FROM offers WHERE gpu_model IS NULL")
    )
    assert listed == expected == set()  # every GPU in every recording is in the catalog
    assert done.value.code in (0, None) and report["healthy"]


def test_euro_prices_convert_through_the_ecb_rate(database: Path) -> None:
    [(eur,)] = rows(database, "SELECT usd_per_unit FROM fx_rates WHERE currency = 'EUR'")
    assert eur == pytest.approx(1.1585)


def prices(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> list[dict[str, object]]:
    with pytest.raises(SystemExit):
        main(["--db", str(db), "prices", "--format", "json", "--limit", "1000", *args])
    return json.loads(capsys.readouterr().out)


def test_cheapest_h100_spot_across_providers_sorted(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    offers = prices(capsys, database, "--gpu", "H100", "--pricing", "spot")
    assert len({o["provider"] for o in offers}) >= 5
    # canonical H100 models, plus unmapped offers whose raw name says H100 (OCI's H100T)
    assert all(o["pricing"] == "spot" for o in offers)
    assert all(str(o["gpu_model"]).startswith("H100") or o["gpu_model"] is None for o in offers)
    per_gpu = [o["price_gpu_hour_usd"] for o in offers]
    assert per_gpu == sorted(per_gpu)  # type: ignore[type-var]
    [(cheapest,)] = rows(
        database,
        "SELECT min(price_gpu_hour_usd) FROM offers "
        "WHERE gpu_model LIKE 'H100%' AND pricing = 'spot'",
    )
    assert per_gpu[0] == pytest.approx(cheapest)


def test_eu_filter_across_providers(database: Path, capsys: pytest.CaptureFixture[str]) -> None:
    offers = prices(capsys, database, "--eu")
    assert len({o["provider"] for o in offers}) >= 4
    # prices leaves out offers whose GPU maps to no catalog model (doctor lists them)
    [(eu_members,)] = rows(
        database,
        "SELECT count(*) FROM offers WHERE is_eu AND gpu_model IS NOT NULL "
        "AND pricing IN ('on_demand', 'spot')",  # commitments only when asked for
    )
    assert len(offers) == min(eu_members, 1000)
    assert not {o["country"] for o in offers} & {"GB", "NO", "CH", "US", None}
