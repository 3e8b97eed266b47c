"""sizing.topk on its own: the k cheapest candidates it keeps (ties at the k-th included) are
exactly those a plain sort of every allowed, sized offer gives, however the groups prune."""

from __future__ import annotations

import numpy as np
import pytest

from priceadvisor.sizing import topk


def _offers(rng: np.random.Generator, n: int, n_classes: int, n_shapes: int) -> topk.OfferColumns:
    prices = np.round(rng.uniform(0.3, 6.0, size=n), int(rng.integers(0, 3)))  # equal costs too
    return topk.by_group(
        rng.permutation(n).astype(np.int64),
        rng.integers(0, n_classes, size=n),
        rng.integers(0, n_shapes, size=n),
        prices,
        n_classes,
        n_shapes,
    )


def _by_sort(
    offers: topk.OfferColumns, eligible: topk.Bools, factors: topk.Floats, k: int
) -> set[tuple[int, float]]:
    """Every offer of an allowed class and a sized shape, sorted; the k-th cost and below."""
    offer_class = np.repeat(offers.group_class, np.diff(offers.group_start))
    cost = offers.list_price * factors[offers.shape_id]
    allowed = eligible[offer_class] & ~np.isnan(cost)
    ids, cost = offers.offer_id[allowed], cost[allowed]
    if len(cost) > k:
        boundary = np.sort(cost)[k - 1]
        ids, cost = ids[cost <= boundary], cost[cost <= boundary]
    return set(zip(ids.tolist(), cost.tolist(), strict=True))


@pytest.mark.parametrize("seed", range(40))
def test_the_cheapest_are_those_a_full_sort_gives(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_classes, n_shapes = int(rng.integers(1, 30)), int(rng.integers(1, 12))
    offers = _offers(rng, int(rng.integers(0, 3000)), n_classes, n_shapes)
    eligible = rng.random(n_classes) < rng.random()
    factors = rng.choice([np.nan, 0.5, 1.0, 2.0, 7.0], size=n_shapes)
    for k in (1, 3, 50, 5000):
        positions, cost = topk.costs(offers, eligible, factors, k)
        chosen, chosen_cost = topk.cheapest(positions, cost, k)
        got = set(zip(offers.offer_id[chosen].tolist(), chosen_cost.tolist(), strict=True))
        assert got == _by_sort(offers, eligible, factors, k)
        assert len(chosen) == len(got)  # no offer twice


def test_allowed_shapes_are_those_of_offers_in_allowed_classes() -> None:
    offers = topk.by_group(
        np.arange(4), np.array([0, 0, 1, 2]), np.array([3, 1, 2, 1]), np.ones(4), 3, 4
    )
    eligible = np.array([[True, False, False], [False, True, True], [False, False, False]])
    allowed = topk.allowed_shapes(offers, eligible, 4)
    assert [np.flatnonzero(row).tolist() for row in allowed] == [[1, 3], [1, 2], []]


@pytest.mark.parametrize("seed", range(20))
def test_allowed_shapes_of_random_offers_are_those_by_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_classes, n_shapes = int(rng.integers(1, 30)), int(rng.integers(1, 12))
    offers = _offers(rng, int(rng.integers(0, 3000)), n_classes, n_shapes)
    eligible = rng.random((int(rng.integers(1, 6)), n_classes)) < rng.random()
    allowed = topk.allowed_shapes(offers, eligible, n_shapes)
    group_of_offer = np.searchsorted(offers.group_start, np.arange(len(offers.offer_id)), "right")
    classes = offers.group_class[group_of_offer - 1]
    for widx, row in enumerate(eligible):
        want = {int(s) for s, c in zip(offers.shape_id, classes, strict=True) if row[c]}
        assert set(np.flatnonzero(allowed[widx]).tolist()) == want


def test_no_offers() -> None:
    offers = topk.by_group(*(np.zeros(0, np.int64) for _ in range(3)), np.zeros(0), 2, 2)
    positions, cost = topk.costs(offers, np.ones(2, dtype=np.bool_), np.ones(2), 5)
    assert len(positions) == len(cost) == 0
