"""`estimate` and `tco` as people read them: ranges in words, what would fit, "never" for a
break-even that never comes, the offer compared, and the catalog's TDP and list price."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from priceadvisor.cli import sizing as sizing_cli
from priceadvisor.sizing.estimate import estimate
from tests.conftest import cli


@pytest.fixture
def screen(monkeypatch: pytest.MonkeyPatch) -> Console:
    """An 80-column terminal in place of the commands' stdout."""
    console = Console(width=80, record=True, color_system=None, soft_wrap=True)
    monkeypatch.setattr(sizing_cli, "out", console)
    return console


@pytest.fixture(scope="module")
def offline_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from priceadvisor.cli.app import main

    db = tmp_path_factory.mktemp("reports") / "offline.duckdb"
    with pytest.raises(SystemExit):
        main(["--db", str(db), "fetch", "--offline", "--format", "json"])
    return db


LORA = ("estimate", "--model", "llama-3.1-8b", "--gpu", "H100-SXM-80GB", "--task", "lora")


def test_the_range_is_said_as_likely_low_to_high(
    capsys: pytest.CaptureFixture[str], screen: Console
) -> None:
    code, out, _ = cli(capsys, *LORA, "--train-tokens", "1e8", "--format", "json")
    record = json.loads(out)
    hours, spread = record["hours"], record["uncertainty"]
    low, high = record["likely"]["hours"]
    assert code == 0 and spread > 0
    assert low == pytest.approx(hours / (1 + spread), rel=1e-3)
    assert high == pytest.approx(hours * (1 + spread), rel=1e-3)
    code, _, _ = cli(capsys, *LORA, "--train-tokens", "1e8")
    text = screen.export_text()
    assert code == 0
    assert f"{hours:.3g} h, likely {low:.2g}–{high:.2g} h" in text
    assert f"×/÷ {1 + spread:.2f}" in text and f"uncertainty {spread}" not in text


def test_what_would_fit_is_sized_not_guessed(
    capsys: pytest.CaptureFixture[str], screen: Console
) -> None:
    base = {"--model": "llama-3.1-70b", "--gpu": "H100-SXM-80GB", "--task": "finetune"}

    def run(**changed: str) -> dict:
        options = base | {f"--{k}": v for k, v in changed.items()}
        flat = [x for pair in options.items() for x in pair]
        code, out, err = cli(capsys, "estimate", *flat, "--train-tokens", "1e8", "-f", "json")
        assert code == 0, err
        return dict(json.loads(out))

    record = run()
    assert record["fits"] is False
    would = {a["option"]: str(a["value"]) for a in record["would_fit"]}
    assert set(would) >= {"gpus", "task"}
    for option, value in would.items():  # each suggestion fits when asked for
        assert run(**{option: value})["fits"] is True, option
    assert run(gpus=str(int(would["gpus"]) // 2))["fits"] is False  # and it is the fewest GPUs
    cli(capsys, "estimate", *[x for p in base.items() for x in p], "--train-tokens", "1e8")
    text = screen.export_text()
    assert "no: memory" in text
    assert f"--gpus {would['gpus']}" in text and f"--task {would['task']}" in text


def test_a_fitting_estimate_suggests_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, *LORA, "--train-tokens", "1e8", "--format", "json")
    assert code == 0 and json.loads(out)["would_fit"] == []


def test_serving_suggests_a_lower_precision_and_a_larger_gpu() -> None:
    from priceadvisor import llm
    from priceadvisor.sizing.alternatives import what_fits
    from priceadvisor.sizing.estimate import Workload

    work = Workload(task="serve", arch=llm.lookup("llama-3.1-70b"))
    assert not estimate(work, "H100-SXM-80GB", 1).fits
    found = {a.option: a for a in what_fits(work, "H100-SXM-80GB", 1)}
    assert {"gpus", "precision", "gpu"} <= set(found)
    larger = found["gpu"].value
    assert estimate(work, str(larger), 1).fits
    precision = found["precision"].value
    assert estimate(
        Workload(task="serve", arch=work.arch, precision=precision), "H100-SXM-80GB", 1
    ).fits  # type: ignore[arg-type]


def tco(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str, str]:
    return cli(capsys, "--db", str(db), "tco", *args)


def test_tco_without_flags_prints_three_break_evens_naming_each_offer(
    capsys: pytest.CaptureFixture[str], offline_db: Path, screen: Console
) -> None:
    code, out, err = tco(capsys, offline_db, "--gpu", "H100-SXM-80GB", "--format", "json")
    record = json.loads(out)
    assert code == 0, err
    assert record["power_kw"] == 0.7 and record["power_source"] == "catalog"  # TDP 700 W
    assert record["purchase_usd"] == 30000
    assert record["purchase_source"].startswith("catalog: street-price estimate, 2026, https://")
    evens = {e["against"]: e for e in record["break_evens"]}
    assert list(evens) == ["on_demand", "commitment", "spot"]
    on_demand, spot = evens["on_demand"]["offer"], evens["spot"]["offer"]
    assert on_demand["pricing"] == "on_demand" and on_demand["gpu_model"] == "H100-SXM-80GB"
    assert evens["on_demand"]["rent_gpu_hour_usd"] == pytest.approx(
        on_demand["usd_per_gpu_hour"], rel=1e-3
    )
    assert spot["pricing"] == "spot" and spot["overhead"] > 1
    assert spot["usd_per_gpu_hour"] == pytest.approx(
        spot["list_usd_per_gpu_hour"] * spot["overhead"]
    )
    assert evens["commitment"]["offer"] is None
    assert evens["commitment"]["summary"] == "no commitment price stored"
    code, _, _ = tco(capsys, offline_db, "--gpu", "H100-SXM-80GB")
    text = " ".join(screen.export_text().split())
    assert code == 0
    assert f"against {on_demand['provider']} · {on_demand['region']}, H100-SXM-80GB ×" in text
    assert f"against {spot['provider']} · {spot['region']}, H100-SXM-80GB ×" in text
    assert "restart overhead" in text and "vs commitment no commitment price stored" in text
    assert "700 W (the GPU catalog's TDP)" in text


def test_the_cheapest_offer_per_rental_is_the_one_compared(
    capsys: pytest.CaptureFixture[str], offline_db: Path
) -> None:
    import duckdb

    code, out, _ = tco(capsys, offline_db, "--gpu", "H100-SXM-80GB", "--format", "json")
    evens = {e["against"]: e for e in json.loads(out)["break_evens"]}
    with duckdb.connect(str(offline_db), read_only=True) as con:
        cheapest = con.execute(
            "SELECT min(price_gpu_hour_usd) FROM offers "
            "WHERE gpu_model = 'H100-SXM-80GB' AND pricing = 'on_demand'"
        ).fetchone()
    assert code == 0 and cheapest is not None
    assert evens["on_demand"]["offer"]["list_usd_per_gpu_hour"] == pytest.approx(cheapest[0])


def test_a_break_even_past_the_years_or_below_power_is_never(
    capsys: pytest.CaptureFixture[str], offline_db: Path, screen: Console
) -> None:
    gpu = ("--gpu", "RTX4090-24GB")
    code, out, _ = tco(capsys, offline_db, *gpu, "--purchase-price", "900000", "--format", "json")
    on_demand = json.loads(out)["break_evens"][0]
    assert code == 0 and on_demand["utilisation"] > 1
    assert on_demand["summary"].startswith("never within 3 years")
    code, out, _ = tco(capsys, offline_db, *gpu, "--electricity", "50", "--format", "json")
    on_demand = json.loads(out)["break_evens"][0]
    assert on_demand["utilisation"] is None
    assert on_demand["summary"].startswith("never: power alone costs more")
    tco(capsys, offline_db, *gpu, "--purchase-price", "900000")
    assert "vs on-demand    never within 3 years" in screen.export_text()


def test_tco_says_which_catalog_value_is_missing(
    capsys: pytest.CaptureFixture[str], offline_db: Path
) -> None:
    # A10G: in the recorded offers, with neither a TDP nor a list price in the catalog
    code, _, err = tco(capsys, offline_db, "--gpu", "A10G-24GB", "--purchase-price", "3000")
    assert code == 2
    assert err.strip() == (
        "error: no TDP for A10G-24GB in the GPU catalog (providers/gpus.toml): give --power-w WATTS"
    )
    code, _, err = tco(capsys, offline_db, "--gpu", "L40S-48GB")  # TDP 350 W, no public price
    assert code == 2 and "no list price" in err and "no public price found" in err
    assert "TDP" not in err
    code, out, _ = tco(
        capsys,
        offline_db,
        "--gpu",
        "A10G-24GB",
        "--purchase-price",
        "3000",
        "--power-w",
        "150",
        "--format",
        "json",
    )
    assert code == 0 and json.loads(out)["power_source"] == "given"


def test_tco_breaks_even_against_the_cheapest_stored_commitment(
    capsys: pytest.CaptureFixture[str], offline_db: Path, screen: Console
) -> None:
    """B200: a catalog list price and TDP, and packet.ai's recorded monthly plans."""
    code, out, err = tco(capsys, offline_db, "--gpu", "B200-180GB", "--format", "json")
    assert code == 0, err
    evens = {e["against"]: e for e in json.loads(out)["break_evens"]}
    commitment = evens["commitment"]["offer"]
    import duckdb

    with duckdb.connect(str(offline_db), read_only=True) as con:
        [(cheapest, months)] = con.execute(
            "SELECT price_gpu_hour_usd, term_months FROM offers "
            "WHERE gpu_model = 'B200-180GB' AND pricing = 'reserved' "
            "ORDER BY price_gpu_hour_usd LIMIT 1"
        ).fetchall()
    assert commitment["pricing"] == "reserved" and commitment["term_months"] == months
    assert commitment["usd_per_gpu_hour"] == pytest.approx(cheapest)
    assert evens["commitment"]["rent_gpu_hour_usd"] == pytest.approx(cheapest, rel=1e-3)
    assert evens["commitment"]["summary"] != "no commitment price stored"
    tco(capsys, offline_db, "--gpu", "B200-180GB")
    text = " ".join(screen.export_text().split())
    assert f"reserved for {months} month" in text


@pytest.mark.parametrize(
    ("hourly", "utilisation", "said"),
    [
        (0.5, 0.5, "committing is cheaper at any use (owning's fixed costs alone are $15,200)"),
        (
            0.65,
            0.5,
            "owning is cheaper up to 19,303 GPU-hours (73% utilisation over 3 years), "
            "committing beyond",
        ),
        (0.9, 0.5, "owning is cheaper at any use ($17,762 at 100%)"),
    ],
)
def test_a_commitment_is_said_against_owning_over_the_years(
    hourly: float, utilisation: float, said: str
) -> None:
    """Owning $10,000 at 500 W: $15,200 fixed and $0.0975 per used hour over 3 years."""
    from priceadvisor.cli import reports
    from priceadvisor.sizing.tco import Commitment, Ownership, rent_vs_buy

    held = Commitment(hourly, 36, hourly * 730 * 36)
    record = rent_vs_buy("L40S-48GB", Ownership(10000, 0.5), utilisation, {}, held).as_dict()
    offer = {
        "provider": "civo",
        "region": "global",
        "instance_type": "L40S x1",
        "gpu_model": "L40S-48GB",
        "gpu_count": 1,
        "pricing": "reserved",
        "term_months": 36,
        "list_usd_per_gpu_hour": hourly,
    }
    even = record["break_evens"][1] | {"offer": offer}
    text = reports.break_even(even, record)
    assert text.startswith(f"${hourly * 730 * 36:,.0f} over 3 years whatever the use")
    assert "(1 × 36-month term, paid whether used or not)" in text
    assert f"{said}; against civo · global" in text
    assert text.endswith("reserved for 36 months: $" + f"{hourly:.4f}/GPU-h")
