-- When each run's snapshot was observed (its fetch finished). Snapshots merge in observation
-- order: one observed before the latest merged snapshot of its provider is `superseded` and
-- changes nothing, so history never runs backwards (docs/sql.md). Earlier runs observed when
-- they finished, which is what finished_at held.
ALTER TABLE core.fetch_runs ADD COLUMN observed_at TIMESTAMP;
UPDATE core.fetch_runs SET observed_at = finished_at WHERE status IN ('ok', 'partial');
