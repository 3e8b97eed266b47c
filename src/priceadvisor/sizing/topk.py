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
    """One value per offer, indexed by offer number."""

    class_id: Ints  # the attributes constraints look at (provider, country, pricing, count…)
    shape_id: Ints  # (GPU model, GPU count): what sizing looks at
    effective_price: Floats  # $/h with the spot overhead
    price_hour_usd: Floats


def costs(offers: OfferColumns, eligible_classes: Bools, cost_factors: Floats) -> Floats:
    """Cost of every offer for one workload: effective price x the factor of its shape (NaN
    where the shape was not sized or does not fit), NaN where a constraint excludes it."""
    cost = offers.effective_price * cost_factors[offers.shape_id]
    cost[~eligible_classes[offers.class_id]] = np.nan
    return cost


def cheapest(cost: Floats, k: int) -> Ints:
    """Offer numbers of the k cheapest offers with a cost, in no order, plus every offer that
    ties with the k-th: a partition finds the k-th smallest cost in linear time, and the few
    chosen are ranked afterwards (in SQL, with the full tie-break)."""
    candidates = np.flatnonzero(~np.isnan(cost))
    if len(candidates) <= k:
        return candidates
    chosen = cost[candidates]
    boundary = np.partition(chosen, k - 1)[k - 1]
    within: Ints = candidates[chosen <= boundary]
    return within
