"""`priceadvisor export-opencost`: prices for OpenCost's custom pricing file or CSV provider
(store.opencost says which format is which, and where OpenCost documents them)."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

import duckdb

from priceadvisor.cli.common import UsageError, UserError
from priceadvisor.records import utcnow
from priceadvisor.store import opencost
from priceadvisor.store.reads import OfferFilter


class OpenCostFormat(StrEnum):
    JSON = "json"
    CSV = "csv"


def read_base(path: Path) -> dict[str, str]:
    """An operator's own custom pricing file, whose non-GPU prices the export keeps."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read --base {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"--base {path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise UsageError(
            f"--base {path} must be one JSON object of strings, as OpenCost's default.json "
            '(e.g. "CPU": "0.031611")'
        )
    return data


def export_text(
    con: duckdb.DuckDBPyConnection,
    flt: OfferFilter,
    regions: list[str],
    fmt: OpenCostFormat,
    base: dict[str, str] | None,
) -> str:
    try:
        if fmt is OpenCostFormat.CSV:
            return opencost.csv_pricing(opencost.node_rows(con, flt, regions), utcnow())
        rates = opencost.gpu_rates(con, flt, regions)
        return json.dumps(opencost.custom_pricing(rates, base), indent=2) + "\n"
    except opencost.ExportError as exc:
        raise UserError(str(exc)) from None
