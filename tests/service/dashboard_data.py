"""A small database for the dashboard tests: eleven providers (two of them replayed from
recorded responses), a hostile instance type, a month of history for H100s from enough
providers (12 series, spot and on-demand) to overfill the chart's eight colours, advice (one
offer from a marketplace, i.e. with no SLA), alert states, notifications and a silence.
Prices are round figures of the kind each provider lists, not captures."""

from __future__ import annotations

from pathlib import Path

from priceadvisor.records import RawQuote
from priceadvisor.store import connections
from tests.conftest import ingest_quotes

EVIL = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'


def quote(
    region: str, instance: str, raw: str, count: float, price: float, **kw: object
) -> RawQuote:
    return RawQuote(
        region=region,
        instance_type=instance,
        pricing=str(kw.pop("pricing", "on_demand")),
        price=price,
        gpu_name_raw=raw,
        gpu_count=count,
        **kw,  # type: ignore[arg-type]
    )


OFFERS = {
    "aws": [
        quote("us-east-1", "p5.48xlarge", "H100", 8, 98.32),
        quote("us-east-1", "p5.48xlarge", "H100", 8, 35.10, pricing="spot"),
        quote("eu-central-1", "p5.48xlarge", "H100", 8, 110.00),
        quote("us-east-1", "g6.xlarge", "L4", 1, 0.805),
        quote("eu-central-1", "g5.xlarge", "A10G", 1, 1.21, available=False),
    ],
    "azure": [
        quote("eastus", "Standard_ND96isr_H100_v5", "H100", 8, 98.0),
        quote("westeurope", "Standard_NC24ads_A100_v4", "A100 80GB PCIe", 1, 4.10),
        quote("westeurope", "Standard_NC24ads_A100_v4", "A100 80GB PCIe", 1, 1.40, pricing="spot"),
    ],
    "runpod": [
        quote("community", "RTX 4090", "RTX 4090", 1, 0.34),
        quote("US-CA-1", "H100 SXM", "H100 SXM", 1, 2.69),
    ],
    "vast": [
        quote("DE", "RTX 4090", "RTX 4090", 1, 0.29, offer_count=12, price_median=0.4),
        quote("US", "H100 SXM", "H100 SXM", 1, 1.89, pricing="spot", offer_count=3),
    ],
    "lambda": [quote("global", EVIL, "H100 SXM", 1, 2.49)],
    "nebius": [quote("global", "gpu-h100-sxm", "H100 SXM", 1, 2.95)],
    "crusoe": [quote("global", "h100-80gb-sxm-ib", "H100 SXM", 1, 3.90)],
    "hyperstack": [quote("global", "n3-H100x1", "H100 SXM", 1, 2.40)],
    "together": [quote("global", "H100 SXM", "H100 SXM", 1, 3.36)],
    "digitalocean": [quote("global", "gpu-h100x1-80gb", "H100", 1, 3.39)],
    "coreweave": [quote("US-EAST-04", "gd-8xh100ib-i128", "H100", 8, 49.24)],
}
# Providers whose latest run replayed the recorded responses (`run --offline`).
RECORDED = ("vast", "runpod")


def build(db: Path) -> Path:
    for provider, quotes in OFFERS.items():
        ingest_quotes(db, provider, quotes)
    with connections.writer(db) as con:
        _backdate_h100_history(con)
        _advice_alerts_notifications(con)
        con.execute(
            "UPDATE core.fetch_runs SET source = 'recorded' WHERE list_contains(?, provider)",
            [list(RECORDED)],
        )
    return db


def _backdate_h100_history(con: object) -> None:
    """Each H100 interval began 10 days ago; before it, 20 days at a 20% higher price."""
    con.execute(  # type: ignore[attr-defined]
        "UPDATE core.current_offers SET valid_from = now()::TIMESTAMP - INTERVAL 10 DAY "
        "WHERE gpu_model = 'H100-SXM-80GB'"
    )
    con.execute(  # type: ignore[attr-defined]
        """INSERT INTO core.price_closed BY NAME
        SELECT * REPLACE (price_hour_usd * 1.2 AS price_hour_usd,
                          price_gpu_hour_usd * 1.2 AS price_gpu_hour_usd,
                          price_hour_original * 1.2 AS price_hour_original,
                          now()::TIMESTAMP - INTERVAL 30 DAY AS valid_from,
                          valid_from AS valid_to)
        FROM core.price_intervals WHERE gpu_model = 'H100-SXM-80GB'"""
    )


def _advice_alerts_notifications(con: object) -> None:
    run = con.execute  # type: ignore[attr-defined]
    run(
        """INSERT INTO core.advice (workload, task, rank, provider, region, instance_type,
            gpu_model, gpu_count, pricing, price_hour_usd, usd_per_mtok, monthly_usd, replicas,
            tokens_per_s, ttft_ms, tpot_ms, binding, low, high, spot_overhead, computed_at,
            list_cost_usd, effective_cost_usd, terms_applied, list_rank, rank_reason)
        VALUES ('chat-70b', 'serve', 1, 'vast', 'US', 'H100 SXM', 'H100-SXM-80GB', 1, 'spot',
                1.89, 0.41, 3035.34, 2, 1280, 180, 22, 'bandwidth', 0.33, 0.52, 1.1,
                now()::TIMESTAMP, 0.40, 0.41, ['egress 1000 GB/month × $0.001/GB: +$0.01'], 2,
                'list #2 → #1: egress +$0.01 here vs +$0.15 on lambda global (list #1)'),
               ('chat-70b', 'serve', 2, 'lambda', 'global', ?, 'H100-SXM-80GB', 1,
                'on_demand', 2.49, 0.54, 3635.4, 2, 1280, 180, 22, 'bandwidth', 0.43, 0.68, 1,
                now()::TIMESTAMP, 0.39, 0.54, [?], 1, NULL)""",
        [EVIL, "egress " + EVIL],
    )
    run(
        """INSERT INTO core.advice (workload, task, rank, provider, region, instance_type,
            gpu_model, gpu_count, pricing, price_hour_usd, cost_usd, tokens_per_s, hours,
            binding, low, high, spot_overhead, computed_at)
        VALUES ('finetune-8b', 'train', 1, 'aws', 'us-east-1', 'p5.48xlarge', 'H100-SXM-80GB',
                8, 'on_demand', 98.32, 482.0, 41000, 4.9, 'compute', 330.0, 700.0, 1,
                now()::TIMESTAMP)"""
    )
    run(
        """INSERT INTO core.alert_state VALUES
        ('price_drop|H100', 'price_drop', '{"gpu_model": "H100-SXM-80GB"}', 3.0, 2.49, 2, true,
         2.49, now()::TIMESTAMP, now()::TIMESTAMP)"""
    )
    run(
        """INSERT INTO core.notifications (kind, channel, key, created_at, status, last_error)
        VALUES ('alert', 'email', 'alert:price_drop|H100:1', now()::TIMESTAMP, 'failed', ?)""",
        [EVIL],
    )
    run(
        """INSERT INTO core.silences (matchers, comment, created_at, expires_at)
        VALUES ('{"provider": "aws"}', 'maintenance', now()::TIMESTAMP,
                now()::TIMESTAMP + INTERVAL 1 DAY)"""
    )
