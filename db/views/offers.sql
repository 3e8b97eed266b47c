-- offers: every current offer (a public contract, documented in docs/sql.md).
CREATE OR REPLACE VIEW main.offers AS
SELECT
    p.provider,
    p.region,
    NULLIF(p.zone, '')          AS zone,
    r.city,
    r.country,
    r.continent,
    r.is_eu,
    p.instance_type,
    p.gpu_model,
    p.gpu_name_raw,
    p.gpu_count,
    p.gpu_memory_gb,
    p.vcpus,
    p.ram_gb,
    p.pricing,
    p.price_hour_usd,
    p.price_gpu_hour_usd,
    p.currency,
    p.price_hour_original,
    p.price_origin,
    p.price_rule,
    p.available,
    p.interruption_rate,
    p.offer_count,
    p.price_hour_median_usd,
    p.price_date,
    p.first_seen,
    p.last_seen,
    p.source_url
FROM core.current_intervals AS p
LEFT JOIN core.regions AS r ON r.provider = p.provider AND r.region = p.region;
