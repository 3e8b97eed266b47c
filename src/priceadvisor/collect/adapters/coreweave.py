"""CoreWeave public pricing page (HTML, no authentication).

Format: the real page's markup (an excerpt is in providers/recordings/coreweave/). The GPU
tables lie between the headings "On-demand GPU instances" and "On-demand CPU instances" (the CPU
tables below reuse the same row markup, so the end heading matters); an `<h5>` "REGION: NORTH
AMERICA" / "REGION: EUROPE" starts each region's table. Each `div[role=listitem].table-row-v2`
row names the model in `h3.table-model-name` (twice), its facts in `.table-meta-text-right`
pairs (value, label) and its prices in `span.instance-price` / `span.spot-price` `.item-value`.

Traps handled: prices are USD per instance; "4^1" (a footnote marker) is a GPU count of 4;
"N/A" or empty means not offered; "Contact sales" rows have no price and are not offers; the
"Inference Single GPU Price" is another product and is ignored. Every row's on-demand and spot
spans must be there, and a price must read as dollars per hour ("$49.24 / Hour"): anything else
(another currency, per GPU, per month, a word the reader does not know) fails the run, and rows
that are not offered are counted. GPU rows with no price at all fail the run (the page moved)
rather than closing every offer. The page answers 403 to a
default Python User-Agent, so a browser-like one is sent.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from bs4 import BeautifulSoup, Tag

from priceadvisor.collect.adapters.base import (
    Adapter,
    AdapterOutput,
    ProgressCallback,
    SourceFormatError,
    require_complete_html,
)
from priceadvisor.collect.http import HttpSession
from priceadvisor.collect.pages import ParsedPage, parse_price, text_of
from priceadvisor.records import PriceBasis, Pricing, RawQuote

BROWSER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) priceadvisor (GPU price tracker)"
START, END = "on-demand gpu instances", "on-demand cpu instances"
# Fact labels by meaning (lower case): the page says "GPU Count", "VRAM", "vCPUs", "System RAM".
FACTS = {
    "gpus": r"^gpu(s| count)\b",
    "vram": r"vram|gpu memory",
    "vcpus": r"vcpu|cpu cores",
    "ram": r"system ram|^ram\b|system memory",
}
_NUMBER = re.compile(r"^\s*([\d,]+(?:\.\d+)?)")


class CoreWeaveAdapter(Adapter):
    id: ClassVar[str] = "coreweave"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        url = self.endpoints["pricing"]
        html = require_complete_html(
            await session.get_text(url, headers={"User-Agent": BROWSER_AGENT})
        )
        page = parse_page(html, url)
        progress(page.summary())
        return AdapterOutput(quotes=page.quotes)


def parse_quotes(html: str, url: str) -> list[RawQuote]:
    return parse_page(html, url).quotes


def parse_page(html: str, url: str) -> ParsedPage:
    soup = BeautifulSoup(html, "html.parser")
    rows = list(_gpu_rows(soup))
    if not rows:
        raise SourceFormatError("no GPU rows under 'On-demand GPU instances' (layout changed?)")
    page = ParsedPage()
    for region, row in rows:
        page.quotes += parse_row(row, region, url, page)
    if not page.quotes:
        # An empty success would close every offer: rows without one price is a changed page.
        raise SourceFormatError("GPU rows but no price in any of them (layout changed?)")
    return page


def _gpu_rows(soup: BeautifulSoup) -> list[tuple[str, Tag]]:
    """(region, row) for every row between the GPU heading and the CPU heading."""
    inside, region, rows, ended = False, None, [], False
    for element in soup.find_all(["h2", "h5", "div"]):
        text = element.get_text(" ", strip=True).lower() if element.name != "div" else ""
        if element.name == "h2":
            if START in text:
                inside = True
            elif END in text and inside:
                ended = True
                break
        elif element.name == "h5" and inside and text.startswith("region:"):
            region = text.removeprefix("region:").strip().replace(" ", "-")
        elif inside and _is_row(element):
            if region is None:
                raise SourceFormatError("a GPU row comes before any 'REGION:' heading")
            rows.append((region, element))
    if rows and not ended:
        # Without the CPU heading, CPU rows (same markup) would be read as GPU offers.
        raise SourceFormatError("no 'On-demand CPU instances' heading after the GPU tables")
    return rows


def _is_row(element: Tag) -> bool:
    classes: list[str] = list(element.get("class") or [])
    return element.get("role") == "listitem" and "table-row-v2" in classes


def parse_row(row: Tag, region: str, url: str, page: ParsedPage) -> list[RawQuote]:
    name_tag = row.find("h3", class_="table-model-name")
    if name_tag is None:
        raise SourceFormatError("a row has no h3.table-model-name")
    prices = {
        Pricing.ON_DEMAND: _span_price(row, "instance-price"),
        Pricing.SPOT: _span_price(row, "spot-price"),
    }
    for kind, price in prices.items():
        if price is None:
            page.skipped[f"{kind} not offered (N/A, empty, contact sales)"] += 1
    facts = _facts(row)
    gpus = _number(_fact(facts, FACTS["gpus"]))
    if gpus is None and any(p is not None for p in prices.values()):
        # Prices are per instance: without its GPU count no per-GPU price can be derived.
        raise SourceFormatError(f"{name_tag.get_text(strip=True)}: no readable GPU count")
    common: dict[str, Any] = {
        "region": region,
        "instance_type": name_tag.get_text(strip=True),
        "price_basis": PriceBasis.NODE,
        "gpu_name_raw": name_tag.get_text(strip=True),
        "gpu_count": gpus,
        "gpu_memory_gb": _number(_fact(facts, FACTS["vram"])),
        "vcpus": _number(_fact(facts, FACTS["vcpus"])),
        "ram_gb": _number(_fact(facts, FACTS["ram"])),
        "source_url": url,
    }
    return [RawQuote(pricing=p, price=v, **common) for p, v in prices.items() if v is not None]


def _fact(facts: dict[str, str], pattern: str) -> str | None:
    """The first fact whose label means `pattern` ("GPU Count", "GPUs"; "System RAM (GB)")."""
    return next((v for label, v in facts.items() if re.search(pattern, label)), None)


def _facts(row: Tag) -> dict[str, str]:
    facts = {}
    for cell in row.select(".table-meta-text-right"):
        parts = cell.find_all("div")
        if len(parts) >= 2:
            facts[parts[1].get_text(" ", strip=True).lower()] = parts[0].get_text(strip=True)
    return facts


def _span_price(row: Tag, css_class: str) -> float | None:
    """The instance-hour price in the row's `css_class` span; None where the page says there
    is none ("N/A", "Contact sales", empty); a price in any other form fails the run."""
    span = row.find("span", class_=css_class)
    value = span.find("span", class_="item-value") if isinstance(span, Tag) else None
    if not isinstance(span, Tag) or not isinstance(value, Tag):
        raise SourceFormatError(f"a row has no span.{css_class} .item-value (layout changed?)")
    price = parse_price(value.get_text(" ", strip=True))
    if price is None:
        return None
    stated = parse_price(text_of(span).split(":", 1)[-1])
    if stated is None or stated.period != "hour" or stated.per_gpu or stated.other_unit:
        raise SourceFormatError(f"not an instance-hour price: {text_of(span)!r}")
    return price.amount


def _number(text: str | None) -> float | None:
    match = _NUMBER.match(text or "")  # "4^1" → 4 (footnote), "2,048" → 2048, "N/A" → None
    return float(match.group(1).replace(",", "")) if match else None
