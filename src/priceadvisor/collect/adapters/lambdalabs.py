"""Lambda Cloud: the public pricing page, or the instance-types API when a key is set.

API (`LAMBDA_API_KEY`, Bearer): `data.<name>.instance_type` with `description` ("8x A100 (80 GB
SXM4)"), `gpu_description`, `price_cents_per_hour` (integer US cents per node-hour), `specs`;
`regions_with_capacity_available` is availability. Prices do not depend on region: one offer per
instance type is stored under region "global" (available = capacity anywhere), plus one per
region that has capacity right now.

Page (no key): rows `<tr data-plan="NVIDIA B200 SXM6">` with `<td data-label="…">` cells (VRAM/GPU,
vCPUs, RAM, STORAGE, PRICE/GPU/HR*); the price is per GPU and differs by node size. Each table
sits in a `div[role=tabpanel]` (generated ids such as `tabpanel-:island-r7:-0`); the node size
is the label ("8x", "4x", …) of the `[role=tab]` that names the panel, whichever attribute links
them: the panel's `aria-labelledby`, the tab's `aria-controls`, or a data-* value that singles
out one tab. Two rows of one tab can differ only in VRAM (A100 SXM 40 GB and 80 GB), so the VRAM
is part of the instance type ("8x NVIDIA A100 SXM 40 GB"). A "—" price is a size not sold.

The "1-Click Clusters" tables (DURATION / GPU COUNT / PRICE/GPU/HR) are committed capacity, not
on-demand: a row is committed when its table has a DURATION column or any heading of its outline
(the nearest heading, then each nearest heading of a higher level) names clusters; the h3 right
above such a table usually does not. They are excluded and counted in the progress output; the
store has no kind for commitments yet. The escaped copies of the tables inside `window.__islands`
are script text and not parsed.

Uncertain: the page's structure is documented, not captured here. A panel whose tab cannot be
found, or whose tab is not labelled like "8x", is a format error (the run fails with the plan
named), as is a page without on-demand rows.
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
from priceadvisor.collect.http import HttpSession, decode_json
from priceadvisor.records import PriceBasis, Pricing, RawQuote

REGION = "global"
_SIZE = re.compile(r"^(\d+)\s*x$", re.IGNORECASE)
_PLAN_SIZE = re.compile(r"^(\d+)\s*x\s+", re.IGNORECASE)
_PRICE = re.compile(r"\$\s*(\d+(?:\.\d+)?)")
_NUMBER = re.compile(r"(\d+(?:\.\d+)?)")
_TAB_ATTRIBUTES = ("data-tab", "data-w-tab", "id")
_HEADINGS = ["h1", "h2", "h3", "h4", "h5", "h6"]


class LambdaAdapter(Adapter):
    id: ClassVar[str] = "lambda"

    async def fetch(self, session: HttpSession, progress: ProgressCallback) -> AdapterOutput:
        if self.credential is not None:
            url = self.endpoints["instance_types"]
            secret = self.credential.get_secret_value()
            response = await session.request(
                "GET", url, headers={"Authorization": f"Bearer {secret}"}
            )
            quotes = parse_instance_types(decode_json(response), url)
        else:
            url = self.endpoints["pricing_page"]
            html = require_complete_html(await session.get_text(url))
            quotes = parse_pricing_page(html, url)
            progress(f"{committed_rows(html)} committed-cluster rows excluded (not on-demand)")
        progress(f"{len(quotes)} quotes")
        return AdapterOutput(quotes=quotes)


def parse_instance_types(document: Any, url: str) -> list[RawQuote]:
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, dict):
        raise SourceFormatError("no 'data' object (format changed?)")
    return [q for name, entry in data.items() for q in _api_quotes(name, entry, url)]


def _api_quotes(name: str, entry: Any, url: str) -> list[RawQuote]:
    try:
        kind = entry["instance_type"]
        cents = kind["price_cents_per_hour"]
        regions = [str(r["name"]) for r in entry.get("regions_with_capacity_available") or []]
    except (KeyError, TypeError) as exc:
        raise SourceFormatError(f"instance type {name!r} lacks {exc}") from None
    specs = kind.get("specs") or {}
    if not isinstance(specs, dict):
        raise SourceFormatError(f"instance type {name!r}: specs is not an object")
    common: dict[str, Any] = {
        "instance_type": name,
        "pricing": Pricing.ON_DEMAND,
        "price_basis": PriceBasis.NODE,
        "price": cents / 100 if isinstance(cents, int | float) else None,
        "gpu_name_raw": kind.get("gpu_description"),
        "gpu_count": _gpus(kind, specs),
        "vcpus": specs.get("vcpus"),
        "ram_gb": specs.get("memory_gib"),
        "source_url": url,
    }
    anywhere = RawQuote(region=REGION, available=bool(regions), **common)
    return [anywhere, *(RawQuote(region=r, available=True, **common) for r in regions)]


def _gpus(kind: dict[str, Any], specs: dict[str, Any]) -> float | None:
    if isinstance(specs.get("gpus"), int | float):
        return float(specs["gpus"])
    match = _PLAN_SIZE.match(str(kind.get("description", "")))
    return float(match.group(1)) if match else None


def parse_pricing_page(html: str, url: str) -> list[RawQuote]:
    soup = BeautifulSoup(html, "html.parser")
    rows = soup.find_all("tr", attrs={"data-plan": True})
    offered = [row for row in rows if not _committed(row)]
    quotes = [q for row in offered if (q := _page_quote(row, url)) is not None]
    if not quotes:
        raise SourceFormatError("no on-demand rows with a price per GPU (layout changed?)")
    return quotes


def committed_rows(html: str) -> int:
    """How many plan rows sit in committed ("1-Click Clusters") tables: excluded, not stored."""
    soup = BeautifulSoup(html, "html.parser")
    return sum(_committed(row) for row in soup.find_all("tr", attrs={"data-plan": True}))


def _committed(row: Tag) -> bool:
    """Committed capacity: a table with a DURATION column, or any heading above the row in the
    outline (not only the nearest) that names clusters."""
    labels = {str(td.get("data-label", "")).strip().upper() for td in row.find_all("td")}
    if "DURATION" in labels:
        return True
    return any("cluster" in heading.lower() for heading in _outline(row))


def _outline(row: Tag) -> list[str]:
    """The headings the row sits under: the nearest one, then each nearest of a higher level
    (h3 → its h2 → its h1), as a reader of the page's outline would see them."""
    chain: list[str] = []
    level = 7
    for heading in row.find_all_previous(_HEADINGS):
        rank = int(heading.name[1])
        if rank < level:
            chain.append(heading.get_text(" ", strip=True))
            level = rank
        if level == 1:
            break
    return chain


def _page_quote(row: Tag, url: str) -> RawQuote | None:
    cells = {
        str(td.get("data-label", "")).strip().upper(): td.get_text(" ", strip=True)
        for td in row.find_all("td")
    }
    price_text = next((v for k, v in cells.items() if k.startswith("PRICE/GPU")), None)
    if price_text is None:
        raise SourceFormatError("a plan row has no PRICE/GPU/HR cell")
    price = _PRICE.search(price_text)
    if price is None:
        return None  # "—", "Contact us", sold out: no price, so not an offer at this size
    plan = str(row["data-plan"]).strip()
    size = _node_size(row, plan)
    memory = _number(cells.get("VRAM/GPU"))
    return RawQuote(
        region=REGION,
        instance_type=_instance_type(size, plan, memory),
        pricing=Pricing.ON_DEMAND,
        price=float(price.group(1)),
        price_basis=PriceBasis.GPU,
        gpu_name_raw=plan,
        gpu_count=float(size),
        gpu_memory_gb=memory,
        vcpus=_number(cells.get("VCPUS")),
        ram_gb=_number(cells.get("RAM")),
        source_url=url,
    )


def _instance_type(size: int, plan: str, memory: float | None) -> str:
    """Rows of one tab can differ only in VRAM (A100 SXM 40 GB and 80 GB): it is part of the
    name, or one would silently replace the other."""
    vram = f" {memory:g} GB" if memory is not None and f"{memory:g}" not in plan else ""
    return f"{size}x {plan}{vram}"


def _node_size(row: Tag, plan: str) -> int:
    panel = row.find_parent(attrs={"role": "tabpanel"})
    if isinstance(panel, Tag):
        return _tab_size(panel, plan)
    for parent in row.parents:
        for attribute in _TAB_ATTRIBUTES:
            match = _SIZE.match(str(parent.get(attribute, "")).strip())
            if match:
                return int(match.group(1))
    match = _PLAN_SIZE.match(plan)
    if match:
        return int(match.group(1))
    raise SourceFormatError(f"cannot tell the node size of plan {plan!r}")


def _tab_size(panel: Tag, plan: str) -> int:
    """The size is the label of the tab that names the panel, whichever way they are linked."""
    label = _panel_label(panel)
    match = _SIZE.match(label)
    if match is None:
        raise SourceFormatError(f"the tab of plan {plan!r} is labelled {label!r}, not a node size")
    return int(match.group(1))


def _panel_label(panel: Tag) -> str:
    root = list(panel.parents)[-1]
    tabs = [tab for tab in root.find_all(True, attrs={"role": "tab"}) if isinstance(tab, Tag)]
    panel_id = str(panel.get("id", ""))
    references = set(str(panel.get("aria-labelledby", "")).split())
    linked = [
        tab
        for tab in tabs
        if tab.get("id") in references or (panel_id and tab.get("aria-controls") == panel_id)
    ]
    # data-* links only count when they single out one tab: frameworks put the same data-*
    # marker (a scoped-style id) on every element.
    linked = linked or [tab for tab in tabs if _shares_data_value(tab, panel)]
    if len(linked) == 1:
        return linked[0].get_text(" ", strip=True)
    for name, value in panel.attrs.items():
        if name.startswith(("data-", "aria-label")) and _SIZE.match(str(value).strip()):
            return str(value).strip()
    return ""


def _shares_data_value(tab: Tag, panel: Tag) -> bool:
    """Tab and panel linked by a data-* attribute: the same value on both (data-tab="3"), or
    the panel's data-* naming the tab's id."""
    tab_values = {str(v) for k, v in tab.attrs.items() if k.startswith("data-")}
    tab_values.add(str(tab.get("id", "")))
    tab_values.discard("")
    return any(k.startswith("data-") and str(v) in tab_values for k, v in panel.attrs.items())


def _number(text: str | None) -> float | None:
    match = _NUMBER.search((text or "").replace(",", ""))
    return float(match.group(1)) if match else None
