-- Billing terms a source prices per offer rather than per provider: Vast.ai's hosts each set
-- their disk price (`disk_usd_gb_month`, USD per GB-month) and internet egress price
-- (`egress_usd_gb`, USD per GB). NULL: the source states none for the offer, and the
-- provider's manifest terms apply (sizing.effective).
ALTER TABLE core.current_offers ADD COLUMN disk_usd_gb_month DOUBLE;
ALTER TABLE core.current_offers ADD COLUMN egress_usd_gb DOUBLE;
ALTER TABLE core.price_closed ADD COLUMN disk_usd_gb_month DOUBLE;
ALTER TABLE core.price_closed ADD COLUMN egress_usd_gb DOUBLE;

-- Each advice row whose rank differs from its rank by list cost names the term that moved it
-- (sizing.effective.REASON_SQL); NULL where the two ranks agree.
ALTER TABLE core.advice ADD COLUMN rank_reason VARCHAR;
