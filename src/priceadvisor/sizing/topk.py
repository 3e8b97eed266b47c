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
    """One value per offer, the offers grouped by class: the offers of class c are positions
    class_start[c] to class_start[c + 1], so a workload reads only the classes it allows."""

    offer_id: Ints  # the offer's number (its rowid in the advisor's offers table)
    class_id: Ints  # the attributes constraints look at (provider, country, pricing, count…)
    shape_id: Ints  # (GPU model, GPU count): what sizing looks at
    effective_price: Floats  # $/h with the spot overhead
    class_start: Ints


def by_class(
    offer_id: Ints, class_id: Ints, shape_id: Ints, effective_price: Floats, n_classes: int
) -> OfferColumns:
    order = np.argsort(class_id, kind="stable")
    grouped = class_id[order]
    return OfferColumns(
        offer_id=offer_id[order],
        class_id=grouped,
        shape_id=shape_id[order],
        effective_price=effective_price[order],
        class_start=np.searchsorted(grouped, np.arange(n_classes + 1)),
    )


def costs(
    offers: OfferColumns, eligible_classes: Bools, cost_factors: Floats
) -> tuple[Ints, Floats]:
    """(positions, costs) of one workload's candidates: offers whose class its constraints
    allow and whose shape fits (a cost factor that is not NaN); cost = effective price x the
    factor of the offer's shape."""
    positions = _positions(offers.class_start, np.flatnonzero(eligible_classes))
    cost = offers.effective_price[positions] * cost_factors[offers.shape_id[positions]]
    sized = ~np.isnan(cost)
    return positions[sized], cost[sized]


def _positions(class_start: Ints, classes: Ints) -> Ints:
    """The positions of the offers of these classes: runs class_start[c]..class_start[c+1]
    laid end to end (each run's start, shifted by where the run lands, plus a running count)."""
    starts = class_start[classes]
    lengths = class_start[classes + 1] - starts
    landed = np.cumsum(lengths) - lengths
    positions: Ints = np.repeat(starts - landed, lengths) + np.arange(int(lengths.sum()))
    return positions


def cheapest(candidates: Ints, cost: Floats, k: int) -> tuple[Ints, Floats]:
    """The k cheapest candidates in no order, plus every one that ties with the k-th: a
    partition finds the k-th smallest cost in linear time, and the few chosen are ranked
    afterwards (in SQL, with the full tie-break)."""
    if len(cost) <= k:
        return candidates, cost
    boundary = np.partition(cost, k - 1)[k - 1]
    within = cost <= boundary
    return candidates[within], cost[within]
