"""The k cheapest offers of one workload, chosen over columns (numpy) instead of sorting all."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class OfferColumns:
    """The offers in groups of one class and one shape: within a group every offer is allowed
    by the same workloads and costs its effective price times the same factor. The offers of
    group g are positions group_start[g] to group_start[g + 1], so a workload reads only the
    groups it can use, and skips a group whose cheapest offer costs more than those of k
    others."""

    offer_id: Ints  # the offer's number (its rowid in the advisor's offers table)
    list_price: Floats  # $/h as listed: the lower bound of the effective price
    shape_id: Ints  # (GPU model, GPU count): what sizing looks at
    group_start: Ints
    group_class: Ints  # the attributes constraints look at (provider, country, pricing, count…)
    group_shape: Ints
    class_start: Ints  # the groups of class c: class_start[c] to class_start[c + 1]
    group_low: Floats  # the group's lowest effective price


def by_group(
    offer_id: Ints,
    class_id: Ints,
    shape_id: Ints,
    list_price: Floats,
    n_classes: int,
    n_shapes: int,
) -> OfferColumns:
    key = class_id * max(1, n_shapes) + shape_id
    # Not a stable sort (~3 ms at 50k offers against ~0.5 ms): nothing reads the order of the
    # offers within a group. Every choice over them is by cost with each tie at the boundary
    # kept (`cheapest`, `_contenders`), and DuckDB ranks the chosen with the full tie-break.
    order = np.argsort(key)
    key, price = key[order], list_price[order]
    starts = np.flatnonzero(np.diff(key, prepend=-1)) if len(key) else np.zeros(0, np.int64)
    group_key = key[starts]
    group_class = group_key // max(1, n_shapes)
    return OfferColumns(
        offer_id=offer_id[order],
        list_price=price,
        shape_id=shape_id[order],
        group_start=np.append(starts, len(key)),
        group_class=group_class,
        group_shape=group_key % max(1, n_shapes),
        class_start=np.searchsorted(group_class, np.arange(n_classes + 1)),
        group_low=np.minimum.reduceat(price, starts) if len(key) else price,
    )


def allowed_shapes(offers: OfferColumns, eligible: Bools, n_shapes: int) -> Bools:
    """[workload, shape]: whether an offer of the shape is in a class the workload's
    constraints allow (`eligible`: [workload, class]), from the shapes of each class."""
    shapes_of_class = np.zeros((eligible.shape[1], n_shapes), dtype=np.bool_)
    shapes_of_class[offers.group_class, offers.group_shape] = True
    allowed = np.zeros((len(eligible), n_shapes), dtype=np.bool_)
    for widx, classes in enumerate(eligible):  # an integer matrix product has no BLAS: 8x slower
        allowed[widx] = shapes_of_class[classes].any(axis=0)
    return allowed


def costs(
    offers: OfferColumns, eligible_classes: Bools, cost_factors: Floats, k: int
) -> tuple[Ints, Floats]:
    """(positions, costs) of one workload's candidates: offers whose class its constraints
    allow and whose shape fits (a cost factor that is not NaN), in groups that can hold one of
    its k cheapest; cost = effective price x the factor of the offer's shape."""
    groups, _ = _runs(offers.class_start, np.flatnonzero(eligible_classes))
    factor = cost_factors[offers.group_shape[groups]]
    sized = ~np.isnan(factor)
    groups, factor = _contenders(offers, groups[sized], factor[sized], k)
    positions, lengths = _runs(offers.group_start, groups)
    cost = offers.list_price[positions] * np.repeat(factor, lengths)
    return positions, cost


def _contenders(offers: OfferColumns, groups: Ints, factor: Floats, k: int) -> tuple[Ints, Floats]:
    """The groups (with their factors) whose lowest cost is at most the k-th lowest of the
    groups' lowest costs: the cheapest offers of those k groups are k offers costing no more
    than that, so no other group holds one of the k cheapest (or a tie with the k-th)."""
    if len(groups) <= k:
        return groups, factor
    low = offers.group_low[groups] * factor
    kept = low <= np.partition(low, k - 1)[k - 1]
    return groups[kept], factor[kept]


def _runs(start: Ints, runs: Ints) -> tuple[Ints, Ints]:
    """The positions in runs start[r]..start[r+1] laid end to end (each run's start, shifted
    by where the run lands, plus a running count), and each run's length."""
    starts = start[runs]
    lengths = start[runs + 1] - starts
    landed = np.cumsum(lengths) - lengths
    positions: Ints = np.repeat(starts - landed, lengths) + np.arange(int(lengths.sum()))
    return positions, lengths


def cheapest(candidates: Ints, cost: Floats, k: int) -> tuple[Ints, Floats]:
    """The k cheapest candidates in no order, plus every one that ties with the k-th: a
    partition finds the k-th smallest cost in linear time, and the few chosen are ranked
    afterwards (in SQL, with the full tie-break)."""
    if len(cost) <= k:
        return candidates, cost
    boundary = np.partition(cost, k - 1)[k - 1]
    within = cost <= boundary
    return candidates[within], cost[within]
