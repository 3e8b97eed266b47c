"""The shared offer filters (store/filters.py) for the CLI: a value they refuse is a usage
error (exit 2), in the same one line."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import ParamSpec, TypeVar

import duckdb

from priceadvisor.cli.errors import UsageError
from priceadvisor.store import filters as shared
from priceadvisor.store import reads

P = ParamSpec("P")
R = TypeVar("R")


def _as_usage(resolve: Callable[P, R]) -> Callable[P, R]:
    def resolved(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return resolve(*args, **kwargs)
        except shared.FilterError as exc:
            raise UsageError(str(exc)) from None

    return resolved


continent_code = _as_usage(shared.continent_code)
country_code = _as_usage(shared.country_code)
pricing = _as_usage(shared.pricing)
sort_order = _as_usage(shared.sort_order)
offer_filter = _as_usage(shared.offer_filter)


def gpu_models(value: str, known: Iterable[tuple[str, str]]) -> list[str]:
    return _as_usage(shared.gpu_models)(value, known)


def resolve_gpu(con: duckdb.DuckDBPyConnection, flt: reads.OfferFilter, gpu: str | None) -> None:
    _as_usage(shared.resolve_gpu)(con, flt, gpu)
