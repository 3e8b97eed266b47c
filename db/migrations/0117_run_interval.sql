-- The provider's fetch interval (seconds) a run was scheduled at, written when its ingest
-- finishes: readers that load no configuration (`prices`) can then tell a stale price — one
-- not seen for twice its provider's interval — from the database alone.
ALTER TABLE core.fetch_runs ADD COLUMN interval_s DOUBLE;
