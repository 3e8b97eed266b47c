-- Commitment prices (pricing = 'reserved'): a price for renting over a fixed term.
-- `term_months` is the term (12, 36, 1 for a monthly plan) and part of an offer's key, so the
-- 12- and 36-month prices of one instance are two offers with two histories. 0 = no term (every
-- on-demand, spot and market price); the public views show it as NULL.
-- `upfront_usd` / `monthly_usd`: how the term is paid where the source says so (the whole
-- node, USD); price_hour_usd stays the effective hourly price over the term.
ALTER TABLE core.current_offers ADD COLUMN term_months INTEGER DEFAULT 0;
ALTER TABLE core.current_offers ADD COLUMN upfront_usd DOUBLE;
ALTER TABLE core.current_offers ADD COLUMN monthly_usd DOUBLE;
ALTER TABLE core.price_closed ADD COLUMN term_months INTEGER DEFAULT 0;
ALTER TABLE core.price_closed ADD COLUMN upfront_usd DOUBLE;
ALTER TABLE core.price_closed ADD COLUMN monthly_usd DOUBLE;
