-- Where each price came from: `published` by the provider, or `derived` from another price by
-- a documented rule (`price_rule`, e.g. OCI preemptible = 50 % of on-demand). Derived prices
-- are kept but left out of "cheapest" answers unless asked for (docs/sql.md).
ALTER TABLE core.price_intervals ADD COLUMN price_origin VARCHAR DEFAULT 'published';
ALTER TABLE core.price_intervals ADD COLUMN price_rule VARCHAR;
UPDATE core.price_intervals SET price_origin = 'published' WHERE price_origin IS NULL;
-- Quotes of one snapshot that shared a key with another and were collapsed into it (the
-- cheaper one is kept); a run that collapses rows says so instead of dropping them silently.
ALTER TABLE core.fetch_runs ADD COLUMN offers_duplicate INTEGER;
