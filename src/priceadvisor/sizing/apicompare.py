"""Self-host or call an API: a serve workload's best rented option against the cheapest LLM API
for the same model (core.api_prices, through the `api_prices` view).

Units. The advice's `usd_per_mtok` is dollars per 1M *output* tokens of the workload, with the
prompt tokens that come with them (prefill is in the throughput). The API's comparable figure
is therefore `api_usd_per_mtok` = output price + (input_tokens / output_tokens) x input price
+ the per-request fee x requests per 1M output tokens. `api_usd_per_mtok_blended` is the same
bill per 1M tokens of either kind (input and output together), the figure API price lists
quote. Cached-input prices are shown, not used: a workload states no cache-hit share.

Break-even. One always-on replica costs R a month and serves at most K output tokens a month;
at full use it costs S = R / K per token (the advice's usd_per_mtok). The API costs A per token
at every volume. Self-hosting never wins when S >= A. Otherwise n replicas beat the API on
(n R / A, n K]; the API wins again just above n K while (n + 1) R / A > n K, i.e. while
n < S / (A - S). The break-even volume is the one above which self-hosting wins at *every*
larger volume: (n + 1) R / A for the largest such n (R / A when there is none). The
break-even utilisation is S / A: the share of a replica's capacity above which it is cheaper.

Free API tiers (price 0, such as OpenRouter's ":free" variants) are rate-limited and never a
production option, so they are left out of "cheapest API".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import duckdb

from priceadvisor.config import WorkloadProfile
from priceadvisor.llm import catalog_id

MILLION = 1e6
SERVING_TASKS = ("serve",)
# The fields a comparison adds to each serve row of `advise`'s machine formats.
RECORD_FIELDS = (
    "api_provider",
    "api_model_id",
    "api_usd_per_mtok",
    "api_usd_per_mtok_blended",
    "api_monthly_usd",
    "break_even_monthly_tokens",
    "break_even_utilisation",
    "self_hosting_cheaper",
)


@dataclass(frozen=True, slots=True)
class ApiOption:
    api_provider: str
    api_model_id: str
    model_id: str
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    cached_input_usd_per_mtok: float | None
    request_usd: float | None


@dataclass(frozen=True, slots=True)
class Comparison:
    """One serve workload: its best rented offer beside the cheapest API for the same model."""

    workload: str
    model_id: str
    api: ApiOption
    api_usd_per_mtok: float
    api_usd_per_mtok_blended: float
    api_monthly_usd: float | None
    self_provider: str
    self_usd_per_mtok: float
    self_monthly_usd: float | None
    break_even_monthly_tokens: float | None
    break_even_utilisation: float | None

    @property
    def self_hosting_cheaper(self) -> bool:
        """At the workload's monthly volume when it has one, else per token at full use."""
        if self.api_monthly_usd is not None and self.self_monthly_usd is not None:
            return self.self_monthly_usd < self.api_monthly_usd
        return self.self_usd_per_mtok < self.api_usd_per_mtok

    def sentence(self) -> str:
        """One line for a person: the API beside the rented option, and the break-even."""
        api = f"{self.api.api_provider} {self.api.api_model_id}"
        line = (
            f"API for {self.model_id}: {api} ${self.api_usd_per_mtok:.4g}/1M output tokens "
            f"(${self.api_usd_per_mtok_blended:.4g}/1M blended) vs ${self.self_usd_per_mtok:.4g} "
            f"rented at {self.self_provider}"
        )
        if self.api_monthly_usd is not None and self.self_monthly_usd is not None:
            line += f"; ${self.api_monthly_usd:,.0f}/mo by API vs ${self.self_monthly_usd:,.0f}/mo"
        if self.break_even_monthly_tokens is None:
            return line + "; the API is cheaper at every volume"
        volume = _tokens(self.break_even_monthly_tokens)
        share = self.break_even_utilisation or 0
        return line + (
            f"; self-hosting wins at every volume above {volume} output tokens/mo "
            f"({share:.0%} of a replica's capacity)"
        )

    def record(self) -> dict[str, Any]:
        """The flat fields machine formats carry (api_* and break_even_*)."""
        values: dict[str, Any] = {"api_provider": self.api.api_provider}
        values["api_model_id"] = self.api.api_model_id
        values |= {"self_hosting_cheaper": self.self_hosting_cheaper}
        return {name: values.get(name, getattr(self, name, None)) for name in RECORD_FIELDS}


def _tokens(count: float) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if count >= size:
            return f"{count / size:.3g}{unit}"
    return f"{count:.0f}"


def api_usd_per_mtok(api: ApiOption, input_tokens: int, output_tokens: int) -> float:
    """The API's bill per 1M output tokens of the workload, with their prompts and requests."""
    requests = MILLION / output_tokens
    fee = (api.request_usd or 0.0) * requests
    return api.output_usd_per_mtok + input_tokens / output_tokens * api.input_usd_per_mtok + fee


def blended_usd_per_mtok(api: ApiOption, input_tokens: int, output_tokens: int) -> float:
    """The same bill per 1M tokens of either kind (input and output together)."""
    per_output = api_usd_per_mtok(api, input_tokens, output_tokens)
    return per_output * output_tokens / (input_tokens + output_tokens)


def break_even_tokens(
    replica_usd_month: float, self_usd_per_mtok: float, api_per_mtok: float
) -> float | None:
    """Monthly output tokens above which self-hosting is cheaper at every larger volume (module
    docstring); None when it never is."""
    if api_per_mtok <= self_usd_per_mtok or replica_usd_month <= 0:
        return None
    ratio = self_usd_per_mtok / (api_per_mtok - self_usd_per_mtok)
    last_losing = math.ceil(ratio) - 1  # the largest n with n < S / (A - S)
    return (last_losing + 1) * replica_usd_month / api_per_mtok * MILLION


CHEAPEST_SQL = """
SELECT api_provider, api_model_id, model_id, input_usd_per_mtok, output_usd_per_mtok,
    cached_input_usd_per_mtok, request_usd
FROM api_prices
WHERE model_id = ? AND valid_to IS NULL AND NOT is_free
"""


def cheapest_api(
    con: duckdb.DuckDBPyConnection, model_id: str, input_tokens: int, output_tokens: int
) -> ApiOption | None:
    """The current API option with the lowest bill at this input/output mix (ties: by id)."""
    options = [ApiOption(*row) for row in con.execute(CHEAPEST_SQL, [model_id]).fetchall()]
    if not options:
        return None
    return min(
        options,
        key=lambda o: (
            api_usd_per_mtok(o, input_tokens, output_tokens),
            o.api_provider,
            o.api_model_id,
        ),
    )


RENTED_SQL = """
SELECT rank, provider, usd_per_mtok, monthly_usd, replicas FROM advice
WHERE workload = ? AND usd_per_mtok IS NOT NULL AND rank <= ? ORDER BY rank
"""


def compare(
    con: duckdb.DuckDBPyConnection, profile: WorkloadProfile, top: int = 1
) -> dict[int, Comparison]:
    """Each of the workload's ranked offers up to `top` (by rank) beside the cheapest API; empty
    when not serving, without a bundled model id, or without an API price for the model."""
    model_id = (
        catalog_id(profile.model) if profile.task in SERVING_TASKS and profile.model else None
    )
    if model_id is None:
        return {}
    api = cheapest_api(con, model_id, profile.input_tokens, profile.output_tokens)
    if api is None:
        return {}
    rows = con.execute(RENTED_SQL, [profile.name, top]).fetchall()
    return {rank: comparison(profile, model_id, api, *rest) for rank, *rest in rows}


def comparison(
    profile: WorkloadProfile,
    model_id: str,
    api: ApiOption,
    provider: str,
    self_per_mtok: float,
    self_monthly: float | None,
    replicas: int | None,
) -> Comparison:
    """One rented offer (its $/1M output tokens, monthly bill and replicas) against `api`."""
    per_mtok = api_usd_per_mtok(api, profile.input_tokens, profile.output_tokens)
    volume = profile.monthly_output_tokens
    replica_month = self_monthly / replicas if self_monthly is not None and replicas else None
    cheaper_at = self_per_mtok / per_mtok if per_mtok > 0 else math.inf
    return Comparison(
        workload=profile.name,
        model_id=model_id,
        api=api,
        api_usd_per_mtok=per_mtok,
        api_usd_per_mtok_blended=blended_usd_per_mtok(
            api, profile.input_tokens, profile.output_tokens
        ),
        api_monthly_usd=volume / MILLION * per_mtok if volume else None,
        self_provider=provider,
        self_usd_per_mtok=self_per_mtok,
        self_monthly_usd=self_monthly if volume else None,
        break_even_monthly_tokens=(
            break_even_tokens(replica_month, self_per_mtok, per_mtok) if replica_month else None
        ),
        break_even_utilisation=cheaper_at if cheaper_at < 1 else None,
    )


def best_per_workload(
    con: duckdb.DuckDBPyConnection, profiles: list[WorkloadProfile], names: list[str] | None = None
) -> dict[str, Comparison]:
    """Each serve workload (of `names`, when given) with a comparison: its best rented offer."""
    found = {}
    for profile in profiles:
        if names is None or profile.name in names:
            best = compare(con, profile).get(1)
            if best is not None:
                found[profile.name] = best
    return found
