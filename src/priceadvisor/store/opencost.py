"""Prices in the two formats OpenCost reads for nodes it cannot price itself.

1. Custom pricing JSON (OpenCost's `default.json`, mounted from a ConfigMap): one object of
   strings, hourly USD per unit: `CPU`/`spotCPU` per vCPU-hour, `RAM`/`spotRAM` per GB-hour,
   `GPU`/`spotGPU` per GPU-hour, `storage` per GB-hour, and three per-GB egress prices.
   Source: OpenCost docs "On-Premises" (opencost.io/docs/configuration/on-prem, the default.json
   example) and OpenCost's `DefaultPricing` (pkg/cloud/provider/providerconfig.go, whose
   comments give the units: "per GPU hour"). One GPU price per file: OpenCost applies it to
   every GPU of the cluster. Values set through OpenCost's pricing *API* or Helm `costModel`
   are per month (divided by 730 there); a file is read as is, hourly.
2. CSV pricing (OpenCost's CSV provider, `CONFIG_PATH`/`USE_CSV_PROVIDER`): the header
   `EndTimestamp,InstanceID,Region,AssetClass,InstanceIDField,InstanceType,MarketPriceHourly,
   Version` (pkg/cloud/provider/csvprovider.go; examples in configs/pricing_schema*.csv). A
   `node` row prices a node matched by `Region` + the node label named in `InstanceIDField`
   (here the instance type). Rows here carry the whole node's hourly price, GPUs included:
   the CSV provider adds a `gpu` row's price on top of the node's, so none is written.

Only offers fit to compare are exported (store.pricegauges.comparable_offers): a catalog GPU,
a published price, a rentable kind.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from dataclasses import dataclass
from typing import Any

import duckdb

from priceadvisor.store.pricegauges import comparable_offers
from priceadvisor.store.reads import OfferFilter, gpu_families

# The non-GPU fields of OpenCost's documented default.json (its on-prem docs), written when the
# operator gives no base file: they are what OpenCost uses anyway without a custom file.
OPENCOST_DEFAULTS: dict[str, str] = {
    "CPU": "0.031611",
    "spotCPU": "0.006655",
    "RAM": "0.004237",
    "spotRAM": "0.000892",
    "storage": "0.00005479452",
    "zoneNetworkEgress": "0.01",
    "regionNetworkEgress": "0.01",
    "internetNetworkEgress": "0.12",
}
CSV_HEADER = (
    "EndTimestamp",
    "InstanceID",
    "Region",
    "AssetClass",
    "InstanceIDField",
    "InstanceType",
    "MarketPriceHourly",
    "Version",
)
# The well-known label every kubelet sets from the cloud's instance type.
INSTANCE_TYPE_FIELD = "metadata.labels.node.kubernetes.io/instance-type"


class ExportError(ValueError):
    """The filters give nothing OpenCost can use (no offer, several GPU models for one price)."""


@dataclass(frozen=True, slots=True)
class GpuRate:
    gpu_model: str
    pricing: str
    usd: float  # the cheapest matching $/GPU-hour
    offers: int


def _matching(flt: OfferFilter, regions: list[str]) -> tuple[str, list[Any]]:
    where, params = flt.where()
    where = f"{where} AND {comparable_offers('offers')}"
    if regions:
        return f"{where} AND list_contains(?, region)", [*params, regions]
    return where, params


def gpu_rates(
    con: duckdb.DuckDBPyConnection, flt: OfferFilter, regions: list[str] | None = None
) -> list[GpuRate]:
    where, params = _matching(flt, regions or [])
    rows = con.execute(
        "SELECT gpu_model, pricing, min(price_gpu_hour_usd), count(*) FROM offers "
        f"WHERE {where} GROUP BY ALL ORDER BY ALL",
        params,
    ).fetchall()
    return [GpuRate(r[0], r[1], float(r[2]), int(r[3])) for r in rows]


def custom_pricing(rates: list[GpuRate], base: dict[str, str] | None = None) -> dict[str, str]:
    """OpenCost's custom pricing object: `base` (an operator's own file) or OpenCost's
    defaults for everything but the GPU prices, which come from `rates` (one GPU model)."""
    models = sorted({r.gpu_model for r in rates})
    if not models:
        raise ExportError("no published offer matches these filters")
    if len(models) > 1:
        raise ExportError(
            f"OpenCost's custom pricing holds one GPU price, and the filters match {len(models)} "
            f"GPU models ({', '.join(models)}): name one, or use the CSV format"
        )
    by_kind = {r.pricing: r for r in rates}
    pricing = {"provider": "custom", "description": _describe(models[0], by_kind)}
    pricing |= {k: v for k, v in (base or OPENCOST_DEFAULTS).items() if k not in pricing}
    for kind, key in (("on_demand", "GPU"), ("spot", "spotGPU")):
        if kind in by_kind:
            pricing[key] = _decimal(by_kind[kind].usd)
    if "GPU" not in pricing:
        raise ExportError(
            f"no published on-demand offer of {models[0]} matches these filters, and OpenCost's "
            "GPU price is the on-demand one (give it in --base, or widen the filters)"
        )
    return pricing


def catalog_models(con: duckdb.DuckDBPyConnection, value: str) -> list[str]:
    """Catalog ids whose id or family is `value`, compared as the CLI's --gpu does (case,
    spaces and dashes ignored): the daemon's `gpu` parameter."""
    wanted = _key(value)
    return sorted(g for g, family in gpu_families(con) if wanted in (_key(g), _key(family)))


def _key(text: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", text.upper())


def _describe(model: str, by_kind: dict[str, GpuRate]) -> str:
    parts = [f"{k.replace('_', '-')} min of {r.offers} offers" for k, r in sorted(by_kind.items())]
    return f"GPU prices for {model} from priceadvisor ({'; '.join(parts)})"


def _decimal(value: float) -> str:
    """A plain decimal (OpenCost parses it with Go's ParseFloat; no exponent needed)."""
    return f"{value:.6f}".rstrip("0").rstrip(".") or "0"


def node_rows(
    con: duckdb.DuckDBPyConnection, flt: OfferFilter, regions: list[str] | None = None
) -> list[tuple[str, str, float]]:
    """(region, instance type, whole-node $/hour): the cheapest matching price per pair, of
    one pricing kind (on-demand unless the filter names one: a CSV row has one price)."""
    where, params = _matching(flt.replaced(pricing=flt.pricing or "on_demand"), regions or [])
    rows = con.execute(
        "SELECT region, instance_type, min(price_hour_usd) FROM offers "
        f"WHERE {where} GROUP BY ALL ORDER BY ALL",
        params,
    ).fetchall()
    return [(r[0], r[1], float(r[2])) for r in rows]


def csv_pricing(rows: list[tuple[str, str, float]], now: dt.datetime) -> str:
    if not rows:
        raise ExportError("no published offer matches these filters")
    stamp = now.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for region, instance_type, usd in rows:
        writer.writerow(
            [stamp, instance_type, region, "node", INSTANCE_TYPE_FIELD, instance_type,
             _decimal(usd), ""]
        )  # fmt: skip
    return out.getvalue()
