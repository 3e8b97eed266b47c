"""The daemon's OpenCost endpoints: the same exports as `priceadvisor export-opencost`, for an
OpenCost that fetches its pricing over HTTP (docs/operations.md "OpenCost").

GET /opencost/pricing.json  custom pricing JSON (one GPU model: `gpu` must name one)
GET /opencost/pricing.csv   CSV provider rows (whole-node price per region and instance type)

Query parameters: `gpu` (a catalog id or family), `provider` and `region` (repeatable),
`pricing` (on_demand or spot). Bad parameters answer 400, filters matching no offer 404.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import anyio.to_thread
import duckdb
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from priceadvisor.records import utcnow
from priceadvisor.service.webreads import READ_LOCK_TIMEOUT, BadQuery
from priceadvisor.store import opencost
from priceadvisor.store.errors import StoreError
from priceadvisor.store.handle import Store
from priceadvisor.store.reads import OfferFilter


def _filter(request: Request) -> tuple[OfferFilter, str | None, list[str]]:
    params = request.query_params
    pricing = params.get("pricing") or None
    if pricing not in (None, "on_demand", "spot"):
        raise BadQuery("pricing must be on_demand or spot")
    flt = OfferFilter(providers=[p for p in params.getlist("provider") if p], pricing=pricing)
    return flt, params.get("gpu") or None, [r for r in params.getlist("region") if r]


def _resolve(con: duckdb.DuckDBPyConnection, flt: OfferFilter, gpu: str | None) -> None:
    if gpu is not None:
        flt.gpu_models = opencost.catalog_models(con, gpu)
        if not flt.gpu_models:
            raise BadQuery(f"unknown GPU {gpu!r}: a catalog id (H100-SXM-80GB) or family (H100)")


class OpenCostRoutes:
    def __init__(self, where: Store) -> None:
        self.where = where

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/opencost/pricing.json", self.pricing_json),
            Route("/opencost/pricing.csv", self.pricing_csv),
        ]

    async def pricing_json(self, request: Request) -> Response:
        flt, gpu, regions = _filter(request)
        if flt.pricing:
            raise BadQuery("pricing is for pricing.csv: the JSON carries GPU and spotGPU both")

        def work(con: duckdb.DuckDBPyConnection) -> str:
            _resolve(con, flt, gpu)
            rates = opencost.gpu_rates(con, flt, regions)
            return json.dumps(opencost.custom_pricing(rates), indent=2) + "\n"

        return await self._answer(work, "application/json")

    async def pricing_csv(self, request: Request) -> Response:
        flt, gpu, regions = _filter(request)

        def work(con: duckdb.DuckDBPyConnection) -> str:
            _resolve(con, flt, gpu)
            return opencost.csv_pricing(opencost.node_rows(con, flt, regions), utcnow())

        return await self._answer(work, "text/csv; charset=utf-8")

    async def _answer(
        self, work: Callable[[duckdb.DuckDBPyConnection], str], media_type: str
    ) -> Response:
        def read() -> str:
            with self.where.reader(lock_timeout=READ_LOCK_TIMEOUT) as con:
                return work(con)

        try:
            body = await anyio.to_thread.run_sync(read)
        except opencost.ExportError as exc:
            return _error(404, str(exc))
        except StoreError as exc:
            return _error(503, str(exc))
        return Response(body, media_type=media_type)


def _error(status: int, message: str) -> Response:
    return Response(json.dumps({"error": message}), status, media_type="application/json")
