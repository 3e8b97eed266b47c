"""The JSON API's OpenAPI 3.1 description, served at /api/openapi.json.

Hand-written rather than generated: the API is small, and the filters are query parameters that
Starlette's docstring-based generator cannot describe.
"""

from __future__ import annotations

from typing import Any


def _param(name: str, kind: str, text: str, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": kind, **extra}
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": text}


OFFER_FILTERS = [
    _param("gpu", "string", "GPU model id (H100-SXM-80GB) or family (H100)"),
    _param("vram_min", "number", "memory per GPU at least this many GB"),
    _param("gpus", "number", "GPUs per offer"),
    _param(
        "pricing",
        "string",
        "on_demand or spot (both by default); market: SF Compute's market averages, never "
        "rentable; reserved: commitment prices (term_months)",
        enum=["on_demand", "spot", "market", "reserved"],
    ),
    {
        "name": "provider",
        "in": "query",
        "required": False,
        "description": "provider id; repeat for several",
        "schema": {"type": "array", "items": {"type": "string"}},
        "explode": True,
    },
    _param("country", "string", "ISO 3166 country code"),
    _param("continent", "string", "AF AS EU NA OC SA"),
    _param("eu", "string", "1: EU member states only", enum=["1"]),
    _param("available", "string", "1: hide offers the source reports as unavailable", enum=["1"]),
    _param("derived", "string", "1: include prices derived by a rule (not published)", enum=["1"]),
    _param("sort", "string", "ordering", enum=["gpu-hour", "hour", "vram", "provider", "gpu"]),
    _param("page", "integer", "1-based page", minimum=1),
    _param("per_page", "integer", "rows per page", enum=[25, 50, 100, 200]),
]


def _get(summary: str, parameters: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "parameters": parameters or [],
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {}}},
                "400": {"description": "a filter value is invalid"},
                "401": {"description": "a token is configured and was not given"},
                "503": {"description": "the database is busy or missing"},
            },
        }
    }


_MODEL = [
    {
        "name": "model",
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
        "description": "GPU model id, e.g. H100-SXM-80GB",
    }
]

SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "priceadvisor",
        "version": "1",
        "description": "Read-only: current GPU offers, price history, advice, provider health and "
        "alerts. Columns are those of the SQL views in docs/sql.md. Authentication, when a token "
        "is configured: `Authorization: Bearer <token>`.",
    },
    "paths": {
        "/api/offers": _get("Current offers, filtered, sorted and paged", OFFER_FILTERS),
        "/api/cheapest": _get(
            "The cheapest offer of every GPU model under the filters, cheapest model first",
            [p for p in OFFER_FILTERS if p["name"] not in ("sort", "page", "per_page")],
        ),
        "/api/gpus/{model}": _get("Specs, cheapest $/GPU-hour per day and current offers", _MODEL),
        "/api/workloads": _get(
            "The latest ranked options per configured workload (top 10), with each price's "
            "provenance and freshness"
        ),
        "/api/providers": _get(
            "Per provider: last run, status, error, offers (every current one) and the counts "
            "the Providers page links (published_offers, with_derived, commitments, "
            "market_averages), listed-but-not-rentable counts, unmapped names"
        ),
        "/api/alerts": _get("Alert states, recent notifications and silences"),
    },
    "components": {
        "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
    },
}
