-- The storage order of core.current_offers (store/layout.py): the latest fetch run whose
-- inserts a rewrite of the table in GPU-model order covered; NULL when the table was never
-- rewritten so and holds rows written before the order existed (rewritten at the next ingest).
-- Only ever UPDATEd.
CREATE TABLE core.table_layout (
    table_name    VARCHAR NOT NULL PRIMARY KEY,
    clustered_run BIGINT
);
INSERT INTO core.table_layout
SELECT 'current_offers', CASE WHEN EXISTS (SELECT 1 FROM core.current_offers) THEN NULL ELSE 0 END;
