from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from priceadvisor.collect.adapters.base import SourceFormatError
from priceadvisor.collect.adapters.coreweave import BROWSER_AGENT, parse_page, parse_quotes
from priceadvisor.collect.fetch import run_cycle
from priceadvisor.records import RunStatus
from priceadvisor.resources import recordings_dir
from priceadvisor.service.stores import configured_store
from tests.localserver import local_settings, serving

HTML = (recordings_dir() / "coreweave" / "pricing.html").read_text()


def parsed() -> dict[tuple[str, str, str], float | None]:
    return {(q.region, q.instance_type, q.pricing): q.price for q in parse_quotes(HTML, "u")}


def test_both_region_tables_with_per_instance_prices() -> None:
    prices = parsed()
    assert prices[("north-america", "NVIDIA HGX H100", "on_demand")] == 49.24
    assert prices[("north-america", "NVIDIA HGX H100", "spot")] == 19.71
    assert prices[("europe", "NVIDIA HGX H100", "on_demand")] == 52.96


def test_footnote_counts_na_and_contact_sales() -> None:
    quotes = {(q.region, q.instance_type, q.pricing): q for q in parse_quotes(HTML, "u")}
    gb200 = quotes[("north-america", "NVIDIA GB200 NVL72", "on_demand")]
    assert gb200.gpu_count == 4 and gb200.price == 42.0  # "4^1"
    assert ("north-america", "NVIDIA GB200 NVL72", "spot") not in quotes  # N/A
    assert ("north-america", "NVIDIA RTX A6000", "spot") not in quotes  # empty
    assert not any(k[1] == "NVIDIA GB300 NVL72" for k in quotes)  # Contact sales
    assert quotes[("north-america", "NVIDIA HGX B200", "on_demand")].ram_gb == 2048  # "2,048"


def test_cpu_section_and_inference_column_are_ignored() -> None:
    prices = parsed()
    assert not any("Genoa" in k[1] for k in prices)
    assert 10.5 not in prices.values() and 8.6 not in prices.values()


@pytest.mark.parametrize(
    ("html", "message"),
    [
        (HTML.replace("On-demand GPU instances", "GPU Cloud pricing"), "layout changed"),
        (HTML.replace('role="listitem"', 'role="row"'), "layout changed"),
        (HTML.replace("REGION: NORTH AMERICA", "NORTH AMERICA"), "before any 'REGION:'"),
        (HTML.replace('class="table-model-name"', 'class="model"'), "table-model-name"),
        ("<html><body><h1>Access denied</h1></body></html>", "layout changed"),
        (HTML.replace("On-demand CPU instances", "CPU servers"), "no 'On-demand CPU instances'"),
    ],
)
def test_layout_changes_are_format_errors(html: str, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_quotes(html, "u")


def test_fetch_sends_a_browser_agent_and_maps_every_gpu(db_path: Path) -> None:
    with serving("coreweave") as server:
        settings = local_settings(db_path, server)
        [summary] = run_cycle(
            settings, configured_store(settings), ["coreweave"], False, lambda *_: None
        )
    assert summary.status is RunStatus.OK and summary.offers_seen == 20
    assert summary.unmapped == 0
    assert server.agents == [BROWSER_AGENT]
    con = duckdb.connect(str(db_path), read_only=True)
    rows = dict(
        con.execute(
            "SELECT instance_type, gpu_model FROM offers WHERE region = 'north-america'"
        ).fetchall()
    )
    continent = con.execute("SELECT DISTINCT continent FROM offers ORDER BY 1").fetchall()
    con.close()
    assert rows["NVIDIA GH200"] == "GH200-96GB" and rows["NVIDIA A100"] == "A100-SXM-80GB"
    assert rows["NVIDIA GB200 NVL72"] == "GB200-186GB"
    assert continent == [("EU",), ("NA",)]


H100_ON_DEMAND = '<span class="item-value">$49.24</span> / Hour'


@pytest.mark.parametrize(
    ("replacement", "message"),
    [
        ('<span class="item-value">€49.24</span> / Hour', "cannot read a price"),
        ('<span class="item-value">$49.24</span> / Month', "not an instance-hour price"),
        ('<span class="item-value">$6.16</span> / GPU / Hour', "not an instance-hour price"),
    ],
)
def test_a_price_in_another_form_fails_the_run(replacement: str, message: str) -> None:
    html = HTML.replace(H100_ON_DEMAND, replacement, 1)
    assert html != HTML
    with pytest.raises(SourceFormatError, match=message):
        parse_quotes(html, "u")


def test_rows_without_an_offer_are_counted() -> None:
    page = parse_page(
        HTML.replace(H100_ON_DEMAND, '<span class="item-value">Sold out</span>', 1), "u"
    )
    assert ("north-america", "NVIDIA HGX H100", "on_demand") not in {
        (q.region, q.instance_type, q.pricing) for q in page.quotes
    }
    baseline = parse_page(HTML, "u").skipped
    key = "on_demand not offered (N/A, empty, contact sales)"
    assert page.skipped[key] == baseline[key] + 1


@pytest.mark.parametrize(
    ("old", "new"),
    [('class="item-value"', 'class="value"'), ('class="instance-price"', 'class="od-price"')],
)
def test_price_markup_that_moved_fails_rather_than_closing_every_offer(old: str, new: str) -> None:
    with pytest.raises(SourceFormatError, match="layout changed"):
        parse_quotes(HTML.replace(old, new), "u")


def test_facts_are_read_by_their_labels_meaning() -> None:
    html = HTML.replace("<div>GPU Count</div>", "<div>GPUs</div>").replace(
        "<div>System RAM</div>", "<div>System RAM (GB)</div>"
    )
    assert html != HTML
    quotes = {(q.region, q.instance_type, q.pricing): q for q in parse_quotes(html, "u")}
    b200 = quotes[("north-america", "NVIDIA HGX B200", "on_demand")]
    assert (b200.gpu_count, b200.ram_gb) == (8, 2048)


def test_a_row_without_a_gpu_count_fails_the_run() -> None:
    with pytest.raises(SourceFormatError, match="no readable GPU count"):
        parse_quotes(HTML.replace("<div>GPU Count</div>", "<div>Accelerators</div>"), "u")
