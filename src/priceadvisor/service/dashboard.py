"""The web dashboard: server-rendered pages, downloads and a JSON API over the public views.

Pages and API share one set of handlers: each reads in a worker thread (the event loop keeps
serving /healthz and the scheduler meanwhile), on a cursor of the read-only instance that
concurrent requests share (store.sharedreader; a lake: a connection per request), and renders
either Jinja (templates/web/, autoescaped) or JSON. Filters live in the query string, so every
view is a shareable URL, and downloads take the same query string: they contain exactly the page
shown.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import duckdb
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from priceadvisor.notify import render as templates
from priceadvisor.records import utcnow
from priceadvisor.resources import templates_dir
from priceadvisor.service import labels
from priceadvisor.service.openapi import SPEC
from priceadvisor.service.webreads import READ_LOCK_TIMEOUT, BadQuery
from priceadvisor.store import dashboard_reads as queries
from priceadvisor.store import errors
from priceadvisor.store.handle import Store
from priceadvisor.store.reads import Table, accelerator_models, latest_sources, stale_providers
from priceadvisor.store.sharedreader import SharedReader
from priceadvisor.store.spreadsheet import csv_cell

T = TypeVar("T")
# The GPU chart draws this many series at first (the cheapest now), each in its own colour;
# the rest wait behind a toggle. More than ~8 colours cannot be told apart.
CHART_SERIES_SHOWN = 8
# The Prices page lists the cheapest offer of this many GPU models (the cheapest ones) and says
# so when there are more; /api/cheapest answers every model.
CHEAPEST_MODELS_SHOWN = 12
# Far past any real result (200 rows a page), small enough that its row offset is a valid BIGINT.
MAX_PAGE = 10**9


def _one(request: Request, name: str) -> str | None:
    value = request.query_params.get(name, "").strip()
    return value or None


def _number(request: Request, name: str) -> float | None:
    value = _one(request, name)
    try:
        number = None if value is None else float(value)
    except ValueError:
        raise BadQuery(f"{name} must be a number, not {value!r}") from None
    if number is not None and not math.isfinite(number):
        raise BadQuery(f"{name} must be a finite number, not {value!r}")
    return number


def _page(request: Request) -> int:
    page = _number(request, "page")
    if page is None:
        return 1
    if not 1 <= page <= MAX_PAGE or page != int(page):
        raise BadQuery(f"page must be a whole number from 1 to {MAX_PAGE}, not {page:g}")
    return int(page)


def _choice(request: Request, name: str, allowed: tuple[str, ...] | list[str], default: str) -> str:
    value = _one(request, name) or default
    if value not in allowed:
        raise BadQuery(f"{name} must be one of {', '.join(allowed)}")
    return value


def offer_query(request: Request) -> queries.OfferQuery:
    """The Prices filters from the URL (the page's form submits exactly these names)."""
    pricing = _one(request, "pricing")
    if pricing is not None and pricing not in queries.PRICINGS:
        raise BadQuery(f"pricing must be one of {', '.join(queries.PRICINGS)}")
    return queries.OfferQuery(
        gpu=_one(request, "gpu"),
        vram_min=_number(request, "vram_min"),
        gpu_count=_number(request, "gpus"),
        pricing=pricing,
        providers=[p for p in request.query_params.getlist("provider") if p],
        country=_one(request, "country"),
        continent=_one(request, "continent"),
        eu=_one(request, "eu") == "1",
        available_only=_one(request, "available") == "1",
        include_derived=_one(request, "derived") == "1",
        sort=_choice(request, "sort", list(queries.OFFER_SORTS), "gpu-hour"),
        page=_page(request),
        per_page=int(_choice(request, "per_page", [str(n) for n in queries.PAGE_SIZES], "50")),
    )


def jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat(timespec="seconds") if isinstance(value, dt.datetime) else str(value)
    return value


def records(table: Table) -> list[dict[str, Any]]:
    return [{c: jsonable(v) for c, v in zip(table.columns, row, strict=True)} for row in table.rows]


def row_dicts(table: Table) -> list[dict[str, Any]]:
    """Rows by column name with their own types, for a template (times stay datetimes)."""
    return [dict(zip(table.columns, row, strict=True)) for row in table.rows]


def recorded_providers(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """Providers whose current prices come from recorded responses, not a live fetch: every
    price of theirs carries the "recorded" marker."""
    return frozenset(p for p, source in latest_sources(con).items() if source == "recorded")


class Dashboard:
    def __init__(self, store: Store, mode: str) -> None:
        self.store = store
        self.mode = mode  # "live", "recorded responses" (run --offline) or "read-only"
        self._cached_choices: tuple[int, dict[str, list[Any]]] | None = None
        # A DuckDB file: requests share one read-only instance. A lake: each request reads
        # its own snapshot through a connection of its own (store.reader).
        self._shared = (
            SharedReader(store.file, READ_LOCK_TIMEOUT) if store.file is not None else None
        )

    def _choices(self, con: duckdb.DuckDBPyConnection) -> dict[str, list[Any]]:
        """The filter controls' values change only when the data does: kept per change stamp
        (a scan of every offer saved on most page views)."""
        stamp = self.store.change_stamp(con)
        if self._cached_choices is None or self._cached_choices[0] != stamp:
            self._cached_choices = (stamp, queries.filter_choices(con))
        return self._cached_choices[1]

    async def read(self, fn: Callable[..., T], *args: Any, writable_dir: Path | None = None) -> T:
        """`fn` on a sealed read-only connection; only `writable_dir` (a download's temporary
        folder) may be written by it."""

        def work() -> T:
            if self._shared is not None and writable_dir is None:
                with self._shared.cursor() as cursor:
                    return fn(cursor, *args)
            with self.store.reader(
                writable_dir=writable_dir, lock_timeout=READ_LOCK_TIMEOUT
            ) as con:
                return fn(con, *args)

        try:
            return await anyio.to_thread.run_sync(work)
        except errors.StoreError as exc:
            raise HTTPException(503, str(exc)) from None

    async def _parquet_bytes(self, q: queries.OfferQuery) -> bytes:
        with tempfile.TemporaryDirectory(prefix="priceadvisor-web-") as folder:
            target = Path(folder) / "offers.parquet"
            await self.read(queries.offers_page_parquet, q, target, writable_dir=Path(folder))
            return target.read_bytes()

    def page(self, name: str, request: Request, **context: Any) -> HTMLResponse:
        context.setdefault("recorded", frozenset())
        context.setdefault("accelerators", frozenset())
        unit = context.setdefault("unit", "GPU")  # "accelerator" on an accelerator's own page
        html = templates.render(
            f"web/{name}.html.j2",
            request_path=request.url.path,
            mode=self.mode,
            label=labels.device_column(unit),
            **context,
        )
        return HTMLResponse(html)

    # Prices ------------------------------------------------------------------------------
    async def _prices_data(self, request: Request) -> dict[str, Any]:
        q = offer_query(request)

        def gather(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
            table, total = queries.offers_page(con, q)
            cheapest = queries.cheapest_per_model(con, q)
            return {
                "q": q,
                "offers": table,
                "total": total,
                "cheapest": cheapest._replace(rows=cheapest.rows[:CHEAPEST_MODELS_SHOWN]),
                "cheapest_models": len(cheapest.rows),
                "choices": self._choices(con),
                "recorded": recorded_providers(con),
                "stale": stale_providers(con, utcnow()),
                "accelerators": frozenset(accelerator_models(con)),
            }

        return await self.read(gather)

    async def prices(self, request: Request) -> Response:
        data = await self._prices_data(request)
        query = request.url.query
        pages = max(1, -(-data["total"] // data["q"].per_page))
        rows, cheapest = row_dicts(data["offers"]), row_dicts(data["cheapest"])
        return self.page(
            "prices",
            request,
            query=query,
            pages=pages,
            offer_rows=rows,
            cheapest_rows=cheapest,
            **data,
        )

    async def api_offers(self, request: Request) -> Response:
        q = offer_query(request)
        table, total = await self.read(queries.offers_page, q)
        return JSONResponse(
            {"total": total, "page": q.page, "per_page": q.per_page, "offers": records(table)}
        )

    async def api_cheapest(self, request: Request) -> Response:
        table = await self.read(queries.cheapest_per_model, offer_query(request))
        return JSONResponse({"cheapest": records(table)})

    async def download(self, request: Request) -> Response:
        q = offer_query(request)
        kind = request.path_params["kind"]
        if kind == "parquet":
            return Response(
                await self._parquet_bytes(q),
                media_type="application/vnd.apache.parquet",
                headers=_attachment("offers.parquet"),
            )
        table, _ = await self.read(queries.offers_page, q)
        if kind == "json":
            body = json.dumps(records(table), indent=1)
            return Response(body, media_type="application/json", headers=_attachment("offers.json"))
        return Response(_csv(table), media_type="text/csv", headers=_attachment("offers.csv"))

    # One GPU -----------------------------------------------------------------------------
    async def _gpu_data(self, model: str) -> dict[str, Any]:
        # the headline: rentable published prices, as the Prices page shows by default
        now = queries.OfferQuery(gpu=model)
        on_demand = queries.OfferQuery(gpu=model, pricing="on_demand")

        def gather(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
            specs = queries.gpu_specs(con, model)
            if specs is None:
                raise HTTPException(404, f"no GPU model {model!r} in the catalog")
            return {
                "model": model,
                "specs": specs,
                "history": queries.gpu_daily_cheapest(con, model),
                "offers": queries.gpu_offers(con, model),
                "cheapest_now": row_dicts(queries.cheapest_per_model(con, now)),
                "cheapest_on_demand": row_dicts(queries.cheapest_per_model(con, on_demand)),
                "recorded": recorded_providers(con),
            }

        return await self.read(gather)

    async def gpu(self, request: Request) -> Response:
        data = await self._gpu_data(request.path_params["model"])
        chart = chart_series(data["history"])
        rows = row_dicts(data["offers"])
        unit = "accelerator" if data["specs"].get("kind") == "accelerator" else "GPU"
        return self.page("gpu", request, chart=chart, offer_rows=rows, unit=unit, **data)

    async def api_gpu(self, request: Request) -> Response:
        data = await self._gpu_data(request.path_params["model"])
        return JSONResponse(
            {
                "gpu_model": data["model"],
                "specs": {k: jsonable(v) for k, v in data["specs"].items()},
                "daily_cheapest": records(data["history"]),
                "offers": records(data["offers"]),
                # how many there are: `offers` holds the cheapest 200
                "offers_total": data["offers"].total or len(data["offers"].rows),
            }
        )

    # Workloads, providers, alerts --------------------------------------------------------
    async def workloads(self, request: Request) -> Response:
        def gather(con: duckdb.DuckDBPyConnection) -> tuple[Table, frozenset[str]]:
            return queries.workloads(con), recorded_providers(con)

        table, recorded = await self.read(gather)
        groups = _group(row_dicts(table), "workload")
        return self.page("workloads", request, groups=groups, recorded=recorded)

    async def api_workloads(self, request: Request) -> Response:
        return JSONResponse({"advice": records(await self.read(queries.workloads))})

    async def providers(self, request: Request) -> Response:
        table = await self.read(queries.providers)
        return self.page("providers", request, rows=row_dicts(table), share=labels.share)

    async def api_providers(self, request: Request) -> Response:
        table = await self.read(queries.providers)
        return JSONResponse({"mode": self.mode, "providers": records(table)})

    async def _alerts_data(self) -> dict[str, Table]:
        def gather(con: duckdb.DuckDBPyConnection) -> dict[str, Table]:
            return {
                "alerts": queries.alert_states(con),
                "notifications": queries.recent_notifications(con),
                "silences": queries.silences(con),
            }

        return await self.read(gather)

    async def alerts(self, request: Request) -> Response:
        data = {name: row_dicts(table) for name, table in (await self._alerts_data()).items()}
        for silence in data["silences"]:
            silence["matchers"] = labels.matchers(silence["matchers"])
        return self.page(
            "alerts",
            request,
            alerts=labels.alert_rows(data["alerts"]),
            notifications=data["notifications"],
            silences=data["silences"],
        )

    async def api_alerts(self, request: Request) -> Response:
        data = await self._alerts_data()
        return JSONResponse({name: records(table) for name, table in data.items()})

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(SPEC)

    async def login(self, request: Request) -> Response:
        return self.page("login", request, failed=bool(request.query_params.get("failed")))

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/", self.prices),
            Route("/prices", self.prices),
            Route("/prices.{kind:str}", self.download),
            Route("/gpu/{model:str}", self.gpu),
            Route("/workloads", self.workloads),
            Route("/providers", self.providers),
            Route("/alerts", self.alerts),
            Route("/login", self.login, methods=["GET", "POST"]),
            Route("/api/offers", self.api_offers),
            Route("/api/cheapest", self.api_cheapest),
            Route("/api/gpus/{model:str}", self.api_gpu),
            Route("/api/workloads", self.api_workloads),
            Route("/api/providers", self.api_providers),
            Route("/api/alerts", self.api_alerts),
            Route("/api/openapi.json", self.openapi),
            Mount(
                "/static", StaticFiles(directory=templates_dir() / "web" / "static"), name="static"
            ),
        ]


def chart_series(history: Table) -> dict[str, Any]:
    """uPlot's shape: one x axis (days, as Unix seconds) and one series per provider/pricing,
    with null where that series has no price that day; the cheapest on its latest day first,
    and `shown`: how many to draw before the reader asks for all."""
    days = sorted({row[0] for row in history.rows})
    index = {day: i for i, day in enumerate(days)}
    series: dict[str, list[float | None]] = {}
    for day, provider, pricing, usd in history.rows:
        label = f"{provider} · {'spot' if pricing == 'spot' else 'on-demand'}"
        series.setdefault(label, [None] * len(days))[index[day]] = round(usd, 4)
    # offered today before ended ones, then by the last price each had
    ordered = sorted(series, key=lambda k: (series[k][-1] is None, _latest(series[k]), k))
    x = [int(dt.datetime.combine(d, dt.time(), dt.UTC).timestamp()) for d in days]
    return {
        "x": x,
        "labels": ordered,
        "series": [series[label] for label in ordered],
        "spot": [label.endswith("spot") for label in ordered],
        "shown": min(CHART_SERIES_SHOWN, len(ordered)),
    }


def _latest(values: list[float | None]) -> float:
    """A series' last price, on the latest day or, if it has ended, before."""
    return next((v for v in reversed(values) if v is not None), float("inf"))


def _csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([csv_cell(c) for c in table.columns])
    writer.writerows([[csv_cell(v) for v in row] for row in table.rows])
    return buffer.getvalue()


def _attachment(name: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{name}"'}


def _group(rows: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row[key], []).append(row)
    return groups
