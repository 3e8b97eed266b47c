-- The suspicious-offer guard (store/guard.py): an offer it flags is kept with the rule that
-- flagged it (`flag`: not_offered | placeholder | below_market | below_provider | price_jump)
-- and why (`flag_reason`); NULL flag = an ordinary offer. A reason without a flag: flagged,
-- then allowed by the config's allow-list. Closed intervals keep the flag they had, so a
-- glitch (a price jump and back) stays marked in the history.
ALTER TABLE core.current_offers ADD COLUMN flag VARCHAR;
ALTER TABLE core.current_offers ADD COLUMN flag_reason VARCHAR;
ALTER TABLE core.price_closed ADD COLUMN flag VARCHAR;
ALTER TABLE core.price_closed ADD COLUMN flag_reason VARCHAR;
-- How many of a run's offers stayed flagged (NULL for runs before this column existed).
ALTER TABLE core.fetch_runs ADD COLUMN offers_flagged INTEGER;
