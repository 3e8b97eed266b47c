"""The digest's counts count what their label says: "gone: …, N offers" counts offers (whole
keys), not the intervals of their history, and applies the exclusions "new" applies."""

from __future__ import annotations

from pathlib import Path

from priceadvisor.config import Settings
from priceadvisor.notify import digest
from priceadvisor.records import RawQuote, utcnow
from priceadvisor.store import connections
from tests.conftest import ingest_quotes
from tests.notify.test_zone_keys import backdate


def gpu(region: str, price: float, stock: str | None = None, **kw: object) -> RawQuote:
    fields: dict[str, object] = {
        "region": region,
        "instance_type": "h100-sxm5-80gb x1",
        "pricing": "on_demand",
        "price": price,
        "gpu_name_raw": "H100 SXM5 80GB",
        "gpu_count": 1.0,
        "available": True,
        "stock": stock,
    }
    return RawQuote(**(fields | kw))  # type: ignore[arg-type]


def vanished(db: Path) -> list[tuple[str, str, int, list[str]]]:
    with connections.reader(db) as con:
        built = digest.build(con, Settings(), utcnow())
    return [(r["provider"], r["gpu_model"], r["offers"], r["regions"]) for r in built.vanished]


def test_an_offer_whose_stock_changed_before_it_vanished_is_one_offer_gone(db_path: Path) -> None:
    # TensorDock states a count of free GPUs; each change of the count opens an interval, so an
    # offer that went from 4 free to 2 free and then vanished has two intervals in the week.
    others = [gpu("DE", 2.20, "8"), gpu("FI", 2.30, "8"), gpu("NO", 2.40, "8")]
    ingest_quotes(db_path, "tensordock", [gpu("US", 2.00, "4"), *others])
    backdate(db_path, 10)
    ingest_quotes(db_path, "tensordock", [gpu("US", 2.00, "2"), *others])
    ingest_quotes(db_path, "tensordock", others)
    with connections.reader(db_path) as con:
        intervals = con.execute(
            "SELECT count(*) FROM price_history WHERE region = 'US' AND valid_to IS NOT NULL"
        ).fetchone()
    assert intervals == (2,)  # the history this reads: one offer, two closed intervals
    assert vanished(db_path) == [("tensordock", "H100-SXM-80GB", 1, ["US"])]


def test_gone_leaves_out_what_new_leaves_out(db_path: Path) -> None:
    # Oracle publishes on-demand prices; its spot prices are derived from them. An instance that
    # goes takes both with it: one offer gone, as one offer would have been new. A commitment
    # term going is no more "gone" news than one appearing is "new" news.
    derived = "OCI preemptible = 50 % of on-demand"
    kept = [
        gpu("global", 10.0 + n, instance_type=f"BM.GPU.H100.{n}x", gpu_count=float(n))
        for n in (1, 2, 4, 8)
    ]
    a100 = {"instance_type": "BM.GPU.A100-v2.8x", "gpu_count": 8.0, "gpu_name_raw": "A100 80GB"}
    going = [
        gpu("global", 4.0, **a100),
        gpu("global", 2.0, pricing="spot", price_rule=derived, **a100),
        gpu("global", 3.0, pricing="reserved", term_months=12, **a100),
    ]
    ingest_quotes(db_path, "oracle", [*kept, *going])
    backdate(db_path, 10)
    ingest_quotes(db_path, "oracle", kept)
    assert vanished(db_path) == [("oracle", "A100-SXM-80GB", 1, ["global"])]
