-- Availability is part of the change log: a change of `available` or of `stock` (the source's
-- own statement of how much can be rented now: a count of free GPUs, or its level word such as
-- 'high' / 'low' / 'shortage', lower case) opens a new interval like a price change does, so
-- "how long was this offer rentable" is answered by the history (docs/sql.md).
ALTER TABLE core.current_offers ADD COLUMN stock VARCHAR;
ALTER TABLE core.price_closed ADD COLUMN stock VARCHAR;
