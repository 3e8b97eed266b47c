"""Rent vs buy: owning a GPU against the cheapest suitable rental.

Owning costs the purchase spread over its years plus power (board watts x PUE x electricity)
for the hours it runs. At utilisation u the cost per used GPU-hour is
    purchase / (years x 8760 x u) + kW x PUE x $/kWh,
which equals the rental price at the break-even utilisation
    u* = purchase / (years x 8760 x (rent - kW x PUE x $/kWh)),
i.e. after purchase / (rent - kW x PUE x $/kWh) used GPU-hours.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

HOURS_PER_YEAR = 8760


@dataclass(frozen=True, slots=True)
class Tco:
    gpu_model: str
    rent_gpu_hour_usd: float
    purchase_usd: float
    power_kw: float
    pue: float
    electricity_usd_kwh: float
    utilisation: float
    years: float
    own_gpu_hour_usd: float  # per used GPU-hour at `utilisation`
    power_gpu_hour_usd: float
    break_even_gpu_hours: float | None  # None: renting is cheaper than the power alone
    break_even_utilisation: float | None
    cheaper: str

    def as_dict(self) -> dict[str, Any]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(self).items()}


def rent_vs_buy(
    gpu_model: str,
    rent_gpu_hour_usd: float,
    purchase_usd: float,
    power_w: float,
    pue: float,
    electricity_usd_kwh: float,
    utilisation: float,
    years: float,
) -> Tco:
    if min(rent_gpu_hour_usd, purchase_usd, power_w, pue, utilisation, years) <= 0:
        raise ValueError("prices, power, PUE, utilisation and years must be positive")
    power = power_w / 1000 * pue * electricity_usd_kwh
    own = purchase_usd / (years * HOURS_PER_YEAR * utilisation) + power
    margin = rent_gpu_hour_usd - power
    hours = purchase_usd / margin if margin > 0 else None
    share = hours / (years * HOURS_PER_YEAR) if hours is not None else None
    return Tco(
        gpu_model,
        rent_gpu_hour_usd,
        purchase_usd,
        power_w / 1000,
        pue,
        electricity_usd_kwh,
        utilisation,
        years,
        own,
        power,
        hours,
        share,
        "buy" if own < rent_gpu_hour_usd else "rent",
    )
