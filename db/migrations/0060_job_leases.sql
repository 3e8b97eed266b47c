-- Job leases: the alert evaluation and the weekly digest run once per store, not once per
-- daemon, when several daemons share one lake. A daemon runs such a job only while it holds
-- the job's row (holder = its id, expires_at in the future); a holder that dies stops renewing
-- and another daemon takes the row once it expires. The rows exist from the start and are only
-- ever UPDATEd: two daemons taking the same lease change the same row, which a lake's snapshot
-- commit refuses for the second one (two INSERTs of a missing row would both succeed there,
-- as a lake has no unique constraints).
CREATE TABLE core.job_leases (
    job VARCHAR NOT NULL,
    holder VARCHAR,
    expires_at TIMESTAMP NOT NULL
);
INSERT INTO core.job_leases VALUES
    ('alerts', NULL, TIMESTAMP '1970-01-01 00:00:00'),
    ('digest', NULL, TIMESTAMP '1970-01-01 00:00:00');
