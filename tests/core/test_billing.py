"""Billing terms in provider manifests (manifest.Billing): every known term cites a public page,
"unknown" is never written as 0, and the schema refuses what would pass for a term."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
from pydantic import ValidationError

from priceadvisor.manifest import (
    TERM_NAMES,
    UNKNOWN,
    Billing,
    billing_record,
    manifest,
    manifest_ids,
)
from priceadvisor.resources import providers_dir


def _raw_billing(provider_id: str) -> dict[str, Any] | None:
    """The [billing] table as written, before the model reads it."""
    text = (providers_dir() / f"{provider_id}.toml").read_text(encoding="utf-8")
    billing = tomllib.loads(text).get("billing")
    return billing if isinstance(billing, dict) else None


def _terms() -> list[tuple[str, str]]:
    return [
        (provider_id, name)
        for provider_id in manifest_ids()
        if manifest(provider_id).billing is not None
        for name in TERM_NAMES
    ]


@pytest.mark.parametrize(("provider_id", "name"), _terms())
def test_every_known_term_cites_a_page_and_every_zero_says_free(
    provider_id: str, name: str
) -> None:
    billing = manifest(provider_id).billing
    assert billing is not None
    term = billing.terms()[name]
    if term.known:
        source = billing.cited(term)
        assert source is not None and str(source).startswith("https://")
    if term.value == 0:
        assert term.note, f"{provider_id}.{name} = 0 without a note saying the page says free"


@pytest.mark.parametrize("provider_id", [p for p in manifest_ids() if _raw_billing(p)])
def test_unknown_is_written_as_the_word_never_as_0(provider_id: str) -> None:
    raw = _raw_billing(provider_id)
    assert raw is not None
    for name in TERM_NAMES:
        written = raw[name]
        value = written["value"] if isinstance(written, dict) else written
        assert value is not None and value != ""
        # a 0 must be a deliberate, explained "free", never a placeholder
        if value == 0:
            assert isinstance(written, dict) and written.get("note")


def test_the_priority_providers_state_some_terms() -> None:
    known = {
        p: manifest(p).billing.known()  # type: ignore[union-attr]
        for p in ("aws", "runpod", "vast")
    }
    assert all(count >= 3 for count in known.values()), known


BASE: dict[str, Any] = {
    "read_on": "2026-11-27",
    "source": "https://example.com/billing",
    **dict.fromkeys(TERM_NAMES, UNKNOWN),
}


def test_a_table_of_unknowns_needs_no_source() -> None:
    billing = Billing.model_validate(BASE | {"source": None})
    assert billing.known() == 0
    assert billing_record(billing)["granularity"] == {
        "value": "unknown",
        "source": None,
        "note": None,
    }


def test_a_term_takes_its_own_source_over_the_tables() -> None:
    own = "https://example.com/egress"
    billing = Billing.model_validate(
        BASE | {"egress_usd_per_gb": {"value": 0.09, "source": own}, "granularity": "second"}
    )
    record = billing.as_record()
    assert record["egress_usd_per_gb"]["source"] == own
    assert record["granularity"]["source"] == "https://example.com/billing"
    assert billing.known() == 2


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ({"source": None, "granularity": "second"}, "without a source: granularity"),
        ({"egress_usd_per_gb": 0}, "of 0 without a note"),
        ({"egress_usd_per_gb": "0"}, "egress_usd_per_gb"),  # a quoted number is not a price
        ({"egress_usd_per_gb": "n/a"}, "egress_usd_per_gb"),
        ({"egress_usd_per_gb": -0.01}, "egress_usd_per_gb"),
        ({"egress_usd_per_gb": float("nan")}, "egress_usd_per_gb"),
        ({"minimum_minutes": True}, "minimum_minutes"),
        ({"granularity": "fortnight"}, "granularity"),
        ({"spot_pricing": "auction"}, "spot_pricing"),
        ({"granularity": {"value": "second", "source": "not a url"}}, "granularity"),
        ({"granularity": {"value": "second", "typo": 1}}, "typo"),
        ({"disk_usd_per_gb_month": None}, "disk_usd_per_gb_month"),
    ],
)
def test_the_schema_refuses_what_would_pass_for_a_term(
    changed: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        Billing.model_validate(BASE | changed)


def test_a_missing_term_is_refused_rather_than_taken_as_unknown() -> None:
    partial = {k: v for k, v in BASE.items() if k != "spot_billed_at"}
    with pytest.raises(ValidationError, match="spot_billed_at"):
        Billing.model_validate(partial)


def test_a_provider_without_a_table_reads_as_all_unknown() -> None:
    record = billing_record(None)
    assert record["read_on"] is None
    assert all(record[name]["value"] == UNKNOWN for name in TERM_NAMES)
