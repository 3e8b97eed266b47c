-- fx_rates: ECB reference rates, with the USD value of one unit of each currency.
CREATE OR REPLACE VIEW main.fx_rates AS
SELECT
    f.rate_date,
    f.currency,
    f.per_eur,
    usd.per_eur / f.per_eur AS usd_per_unit,
    f.source,
    f.fetched_at
FROM core.fx_rates AS f
LEFT JOIN core.fx_rates AS usd ON usd.currency = 'USD' AND usd.rate_date = f.rate_date;
