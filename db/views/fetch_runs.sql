-- fetch_runs: one row per fetch of one provider (a public contract, documented in docs/sql.md).
CREATE OR REPLACE VIEW main.fetch_runs AS
SELECT
    run_id,
    provider,
    started_at,
    finished_at,
    observed_at,
    status,
    source,
    offers_seen,
    offers_changed,
    offers_new,
    offers_closed,
    offers_rejected,
    offers_duplicate,
    offers_flagged,
    unmapped,
    http_requests,
    http_bytes,
    error,
    interval_s
FROM core.fetch_runs;
