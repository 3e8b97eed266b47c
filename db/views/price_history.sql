-- price_history: every price interval, current and closed (a public contract, documented in docs/sql.md).
CREATE OR REPLACE VIEW main.price_history AS
SELECT
    provider,
    region,
    NULLIF(zone, '') AS zone,
    instance_type,
    pricing,
    NULLIF(term_months, 0) AS term_months,
    upfront_usd,
    monthly_usd,
    gpu_model,
    gpu_name_raw,
    gpu_count,
    price_hour_usd,
    price_gpu_hour_usd,
    currency,
    price_hour_original,
    price_date,
    price_origin,
    price_rule,
    available,
    stock,
    valid_from,
    valid_to,
    last_seen,
    flag,
    flag_reason
FROM core.price_intervals;
