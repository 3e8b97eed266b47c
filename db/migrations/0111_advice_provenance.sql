-- Each advice row says where its price came from and how the spot cost factor was reached.
ALTER TABLE core.advice ADD COLUMN interruption_rate DOUBLE;
ALTER TABLE core.advice ADD COLUMN interruption_source VARCHAR;
ALTER TABLE core.advice ADD COLUMN source_url VARCHAR;
ALTER TABLE core.advice ADD COLUMN fetched_at TIMESTAMP;
ALTER TABLE core.advice ADD COLUMN price_origin VARCHAR;
ALTER TABLE core.advice ADD COLUMN freshness VARCHAR;
ALTER TABLE core.advice ADD COLUMN available BOOLEAN;
