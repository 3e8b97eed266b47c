-- Marketplaces (Vast.ai) are stored as one offer per market (GPU model, count, country,
-- pricing) at its lowest price; these columns keep how many asks that market had and their
-- median, so "cheapest" and "typical" can both be answered. NULL for list-price providers.
ALTER TABLE core.price_intervals ADD COLUMN offer_count INTEGER;
ALTER TABLE core.price_intervals ADD COLUMN price_hour_median_usd DOUBLE;
