from __future__ import annotations

import math

import pytest

from priceadvisor.config import WorkloadProfile
from priceadvisor.sizing.apicompare import (
    ApiOption,
    api_usd_per_mtok,
    blended_usd_per_mtok,
    break_even_tokens,
    comparison,
)

# OpenRouter's recorded Llama 3.1 70B prices: $0.52 in, $0.75 out per 1M tokens.
LLAMA_70B = ApiOption(
    "openrouter", "meta-llama/llama-3.1-70b-instruct", "llama-3.1-70b", 0.52, 0.75, None, 0.0
)


def test_api_bill_per_million_output_tokens_carries_the_prompts() -> None:
    # 1000 prompt tokens per 250 output tokens: 4 M input tokens come with each 1 M output.
    assert api_usd_per_mtok(LLAMA_70B, 1000, 250) == pytest.approx(0.75 + 4 * 0.52)
    assert blended_usd_per_mtok(LLAMA_70B, 1000, 250) == pytest.approx(2.83 * 250 / 1250)


def test_a_per_request_fee_is_spread_over_the_requests_of_a_million_output_tokens() -> None:
    online = ApiOption("openrouter", "x/online", "llama-3.1-8b", 0.2, 0.2, None, 0.005)
    # 4000 requests of 250 output tokens make 1 M output tokens: $20 of fees.
    assert api_usd_per_mtok(online, 1000, 250) == pytest.approx(0.2 + 0.8 + 20)


def _self_hosting(volume: float, replica: float, per_mtok: float) -> float:
    capacity = replica / per_mtok * 1e6
    return max(1, math.ceil(volume / capacity)) * replica


@pytest.mark.parametrize(
    ("replica", "self_per_mtok", "api_per_mtok"),
    [(100.0, 1.0, 1.5), (100.0, 1.0, 3.0), (1087.7, 0.6455, 2.83), (204.4, 0.1556, 0.3)],
)
def test_break_even_is_where_self_hosting_wins_for_good(
    replica: float, self_per_mtok: float, api_per_mtok: float
) -> None:
    """Checked against the step-shaped self-hosting bill, volume by volume."""
    be = break_even_tokens(replica, self_per_mtok, api_per_mtok)
    assert be is not None
    above = [be * (1 + k / 50) + 1 for k in range(1, 400)]
    assert all(_self_hosting(v, replica, self_per_mtok) < api_per_mtok * v / 1e6 for v in above)
    just_below = be * 0.999
    assert _self_hosting(just_below, replica, self_per_mtok) >= api_per_mtok * just_below / 1e6


def test_break_even_with_a_band_where_the_api_wins_again() -> None:
    # S = 1, A = 1.5: one replica wins from 66.7M to 100M tokens, the API again up to 133M.
    assert break_even_tokens(100.0, 1.0, 1.5) == pytest.approx(2 * 100 / 1.5 * 1e6)
    assert break_even_tokens(100.0, 1.0, 3.0) == pytest.approx(100 / 3.0 * 1e6)


def test_no_break_even_when_the_api_is_cheaper_per_token() -> None:
    assert break_even_tokens(100.0, 1.0, 1.0) is None
    assert break_even_tokens(100.0, 2.0, 1.0) is None


def _profile(volume: float | None) -> WorkloadProfile:
    return WorkloadProfile(
        name="chat-70b",
        task="serve",
        model="llama-3.1-70b",
        input_tokens=1000,
        output_tokens=250,
        monthly_output_tokens=volume,
    )


def test_comparison_at_the_workloads_volume() -> None:
    # 3 replicas at $1,087.70 a month each, $0.6455 per 1M output tokens at full use.
    found = comparison(_profile(5e9), "llama-3.1-70b", LLAMA_70B, "lambda", 0.6455, 3263.1, 3)
    assert found.api_monthly_usd == pytest.approx(5e3 * 2.83)
    assert found.self_monthly_usd == 3263.1 and found.self_hosting_cheaper
    assert found.break_even_monthly_tokens == pytest.approx(1087.7 / 2.83 * 1e6)
    assert found.break_even_utilisation == pytest.approx(0.6455 / 2.83)
    assert "self-hosting wins at every volume above 384M" in found.sentence()


def test_comparison_without_a_volume_is_per_token_and_says_when_the_api_always_wins() -> None:
    found = comparison(_profile(None), "llama-3.1-70b", LLAMA_70B, "x", 3.5, 2555.0, 1)
    assert found.api_monthly_usd is None and not found.self_hosting_cheaper
    assert found.break_even_monthly_tokens is None and found.break_even_utilisation is None
    assert found.sentence().endswith("the API is cheaper at every volume")
