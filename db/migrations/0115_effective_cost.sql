-- Each advice row carries its list and effective cost (sizing.effective), the terms that make
-- the difference, and its rank by list cost.
ALTER TABLE core.advice ADD COLUMN list_cost_usd DOUBLE;
ALTER TABLE core.advice ADD COLUMN effective_cost_usd DOUBLE;
ALTER TABLE core.advice ADD COLUMN terms_applied VARCHAR[];
ALTER TABLE core.advice ADD COLUMN list_rank INTEGER;
