"""`new_offer` announces what appears after its rule started, per rule: a rule watching a GPU
no one offers yet announces the first offer of it, and a rule added later does not announce
what was already there."""

from __future__ import annotations

from pathlib import Path

from priceadvisor.config import AlertRule, AlertSettings
from priceadvisor.notify import alerts
from priceadvisor.records import RawQuote, utcnow
from priceadvisor.store import connections
from tests.conftest import ingest_quotes


def lambda_offers(*gpus: str) -> list[RawQuote]:
    names = {"H100": ("gpu_1x_h100_sxm5", "H100 SXM5 80GB"), "B200": ("gpu_1x_b200", "B200")}
    return [
        RawQuote(
            region=region,
            instance_type=names[gpu][0],
            pricing="on_demand",
            price=price,
            gpu_name_raw=names[gpu][1],
            gpu_count=1.0,
        )
        for gpu in gpus
        for region, price in (("us-east-1", 2.49 if gpu == "H100" else 4.99), ("us-west-1", 2.59))
    ]


def fired(db: Path, *rules: AlertRule) -> list[tuple[str, str]]:
    settings = AlertSettings(rules=list(rules), for_fetches=1)
    with connections.writer(db) as con:
        decisions = alerts.evaluate(con, settings, utcnow())
    return sorted(
        (d.observation.labels["gpu_model"], d.observation.labels["region"]) for d in decisions
    )


B200 = AlertRule(kind="new_offer", gpu_model="B200-180GB")
H100 = AlertRule(kind="new_offer", gpu_model="H100-SXM-80GB")


def test_the_first_offer_of_a_gpu_no_one_offered_is_announced(db_path: Path) -> None:
    ingest_quotes(db_path, "lambda", lambda_offers("H100"))
    assert fired(db_path, B200) == []  # no B200 anywhere yet
    assert fired(db_path, B200) == []
    ingest_quotes(db_path, "lambda", lambda_offers("H100", "B200"))
    assert fired(db_path, B200) == [("B200-180GB", "us-east-1"), ("B200-180GB", "us-west-1")]


def test_a_rule_added_later_does_not_announce_what_was_there(db_path: Path) -> None:
    ingest_quotes(db_path, "lambda", lambda_offers("H100", "B200"))
    assert fired(db_path, B200) == []  # the B200 offers there when the rule starts
    assert fired(db_path, B200, H100) == []  # nor the H100 ones when its rule starts
