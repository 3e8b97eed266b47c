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


def costs(
    offers: OfferColumns, eligible_classes: Bools, cost_factors: Floats
) -> tuple[Ints, Floats]:
    """(offer numbers, costs) of one workload's candidates: offers whose class its constraints
    allow and whose shape fits (a cost factor that is not NaN); cost = effective price x the
    factor of the offer's shape."""
    allowed = np.flatnonzero(eligible_classes[offers.class_id])
    cost = offers.effective_price[allowed] * cost_factors[offers.shape_id[allowed]]
    sized = ~np.isnan(cost)
    return allowed[sized], cost[sized]


def cheapest(offer_ids: Ints, cost: Floats, k: int) -> tuple[Ints, Floats]:
    """The k cheapest candidates in no order, plus every one that ties with the k-th: a
    partition finds the k-th smallest cost in linear time, and the few chosen are ranked
    afterwards (in SQL, with the full tie-break)."""
    if len(cost) <= k:
        return offer_ids, cost
    boundary = np.partition(cost, k - 1)[k - 1]
    within = cost <= boundary
    return offer_ids[within], cost[within]
