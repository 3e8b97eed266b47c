"""Rent vs buy: owning a GPU against three rentals (on-demand, commitment, spot).

Owning pays a fixed sum over its years and power for the hours it runs:
    fixed = purchase x (1 + server share) + kW x colocation $/kW-month x 12 x years
    power = kW x PUE x electricity $/kWh          (per used GPU-hour)
so at utilisation u a used GPU-hour costs fixed / (years x 8760 x u) + power. Against a rental
at `rent` per GPU-hour owning breaks even after
    fixed / (rent - power) used GPU-hours,  i.e. at utilisation  hours / (years x 8760);
never if power alone costs the rent, never within the years if that utilisation exceeds 100 %.
A spot rental is priced with its restart overhead (the advisor's: checkpoints plus the work lost
to interruptions, at the offer's interruption rate), so it is compared at spot price x that factor.

A commitment is paid whether used or not, so it is no price per used hour: over the years owned
(the horizon) it costs its term's payments once per term, renewed at today's price until the
horizon is covered; a term that outlasts the horizon (or its last renewal) is paid in full. More
use costs owning power and the commitment nothing, so owning is the cheaper one *below* the
break-even use:
    fixed + power x hours = commitment's cost   at   hours = (commitment - fixed) / power.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from priceadvisor.sizing.advisor import (
    CHECKPOINT_OVERHEAD,
    DEFAULT_INTERRUPTION_RATE,
    LOST_WORK_SHARE,
)

HOURS_PER_YEAR = 8760
MONTHS_PER_YEAR = 12

# Documented defaults (docs/configuration.md, "Rent vs buy"). Assumptions, not measurements:
# the non-GPU part of a server (CPUs, memory, NICs, chassis) as a share of the GPUs' price;
# a modern air-cooled facility's PUE; a US industrial-to-commercial electricity price; a
# wholesale colocation price per kW of IT load per month; a 3-year depreciation.
SERVER_SHARE = 0.25
PUE = 1.3
ELECTRICITY_USD_KWH = 0.15
COLOCATION_USD_KW_MONTH = 150.0
YEARS = 3.0
UTILISATION = 0.6

# The rentals a GPU is compared against, in the order reported.
AGAINST = ("on_demand", "commitment", "spot")


def spot_overhead(interruption_rate: float | None) -> float:
    """The restart overhead factor on a spot price: checkpointing plus half the work between
    checkpoints lost per interruption (the advisor's model; 15 %/h where the rate is unknown)."""
    rate = DEFAULT_INTERRUPTION_RATE if interruption_rate is None else interruption_rate
    return 1 + CHECKPOINT_OVERHEAD + rate * LOST_WORK_SHARE


def spot_overhead_sql(rate_column: str) -> str:
    """spot_overhead as a SQL expression over an offer's interruption-rate column."""
    return (
        f"(1 + {CHECKPOINT_OVERHEAD} + coalesce({rate_column}, {DEFAULT_INTERRUPTION_RATE})"
        f" * {LOST_WORK_SHARE})"
    )


@dataclass(frozen=True, slots=True)
class Ownership:
    """What owning one GPU costs, before utilisation."""

    purchase_usd: float
    power_kw: float
    server_share: float = SERVER_SHARE
    pue: float = PUE
    electricity_usd_kwh: float = ELECTRICITY_USD_KWH
    colocation_usd_kw_month: float = COLOCATION_USD_KW_MONTH
    years: float = YEARS

    def __post_init__(self) -> None:
        if min(self.purchase_usd, self.power_kw, self.pue, self.years) <= 0:
            raise ValueError("purchase price, power, PUE and years must be positive")
        if min(self.server_share, self.electricity_usd_kwh, self.colocation_usd_kw_month) < 0:
            raise ValueError("server share, electricity and colocation cannot be negative")

    @property
    def hours(self) -> float:
        return self.years * HOURS_PER_YEAR

    @property
    def fixed_usd(self) -> float:
        """Paid whether the GPU runs or not: hardware and the colocation of its power."""
        colocation = self.power_kw * self.colocation_usd_kw_month * 12 * self.years
        return self.purchase_usd * (1 + self.server_share) + colocation

    @property
    def power_gpu_hour_usd(self) -> float:
        return self.power_kw * self.pue * self.electricity_usd_kwh

    def gpu_hour_usd(self, utilisation: float) -> float:
        """Owning's cost per used GPU-hour at this utilisation."""
        return self.fixed_usd / (self.hours * utilisation) + self.power_gpu_hour_usd


@dataclass(frozen=True, slots=True)
class BreakEven:
    """Owning against one rental price: after how many used GPU-hours it is cheaper."""

    against: str
    rent_gpu_hour_usd: float | None  # None: no such rental stored
    gpu_hours: float | None  # None: never (or nothing to compare)
    utilisation: float | None
    # "above": owning is cheaper above the break-even use (a rental paid per used hour);
    # "below": cheaper below it (a commitment, paid whether used or not)
    buy_when: str = "above"
    # a commitment's: what it costs over the horizon, in how many terms of how many months
    horizon_usd: float | None = None
    terms: int | None = None
    term_months: int | None = None

    @property
    def within_years(self) -> bool:
        return self.utilisation is not None and self.utilisation <= 1


@dataclass(frozen=True, slots=True)
class Commitment:
    """One GPU's share of a commitment: its hourly price, its term and the term's payments."""

    gpu_hour_usd: float
    term_months: int
    term_usd: float

    def __post_init__(self) -> None:
        if self.term_months < 1 or min(self.gpu_hour_usd, self.term_usd) < 0:
            raise ValueError("a commitment needs a term of a month or more and no negative price")

    def terms(self, years: float) -> int:
        """Terms paid to hold it for `years`: renewed until they cover them, the last in full."""
        return max(1, math.ceil(years * MONTHS_PER_YEAR / self.term_months - 1e-9))

    def cost_usd(self, years: float) -> float:
        return self.terms(years) * self.term_usd


def commitment_break_even(own: Ownership, held: Commitment | None) -> BreakEven:
    """Owning against a commitment held over the years owned: owning is cheaper up to the
    GPU-hours where its fixed sum plus power reaches the commitment's cost (None: owning's fixed
    sum alone reaches it, or power is free and it never does; a utilisation over 1: owning is
    cheaper however much the GPU runs)."""
    if held is None:
        return BreakEven("commitment", None, None, None, "below")
    cost = held.cost_usd(own.years)
    gap, power = cost - own.fixed_usd, own.power_gpu_hour_usd
    hours = gap / power if gap > 0 and power > 0 else None
    share = None if hours is None else hours / own.hours
    terms = held.terms(own.years)
    return BreakEven(
        "commitment", held.gpu_hour_usd, hours, share, "below", cost, terms, held.term_months
    )


def break_even(own: Ownership, against: str, rent_gpu_hour_usd: float | None) -> BreakEven:
    if rent_gpu_hour_usd is None:
        return BreakEven(against, None, None, None)
    margin = rent_gpu_hour_usd - own.power_gpu_hour_usd
    if margin <= 0:
        return BreakEven(against, rent_gpu_hour_usd, None, None)
    hours = own.fixed_usd / margin
    return BreakEven(against, rent_gpu_hour_usd, hours, hours / own.hours)


@dataclass(frozen=True, slots=True)
class Tco:
    gpu_model: str
    own: Ownership
    utilisation: float
    break_evens: tuple[BreakEven, ...]

    @property
    def own_gpu_hour_usd(self) -> float:
        return self.own.gpu_hour_usd(self.utilisation)

    @property
    def own_usd(self) -> float:
        """Owning's cost over its years at the chosen utilisation."""
        return self.own.fixed_usd + self.own.power_gpu_hour_usd * self.own.hours * self.utilisation

    def rent_usd(self, even: BreakEven) -> float | None:
        """The rental's cost over the years at the chosen utilisation (a commitment's whatever
        the use)."""
        if even.horizon_usd is not None or even.rent_gpu_hour_usd is None:
            return even.horizon_usd
        return even.rent_gpu_hour_usd * self.own.hours * self.utilisation

    def cheaper(self, even: BreakEven) -> str | None:
        """Which is cheaper at the chosen utilisation (None: no rental to compare)."""
        rent = self.rent_usd(even)
        if rent is None:
            return None
        return "buy" if self.own_usd < rent else "rent"

    def as_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"gpu_model": self.gpu_model, **asdict(self.own)}
        record |= {
            "utilisation": self.utilisation,
            "fixed_usd": self.own.fixed_usd,
            "power_gpu_hour_usd": self.own.power_gpu_hour_usd,
            "own_gpu_hour_usd": self.own_gpu_hour_usd,
            "own_usd": self.own_usd,
            "own_full_use_usd": self.own.fixed_usd + self.own.power_gpu_hour_usd * self.own.hours,
        }
        record["break_evens"] = [
            _rounded(
                asdict(even) | {"rent_usd": self.rent_usd(even), "cheaper": self.cheaper(even)}
            )
            for even in self.break_evens
        ]
        return _rounded(record)


def _rounded(record: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in record.items()}


def rent_vs_buy(
    gpu_model: str,
    own: Ownership,
    utilisation: float,
    rents: dict[str, float | None],
    held: Commitment | None = None,
) -> Tco:
    """Owning against each rental paid per used hour in `rents` (against -> USD per GPU-hour,
    None if none) and against the commitment `held` (None: none stored)."""
    if not 0 < utilisation <= 1:
        raise ValueError("utilisation must be in (0, 1]")
    evens = tuple(
        commitment_break_even(own, held)
        if against == "commitment"
        else break_even(own, against, rents.get(against))
        for against in AGAINST
    )
    return Tco(gpu_model, own, utilisation, evens)
