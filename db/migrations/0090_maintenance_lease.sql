-- The lease of lake maintenance (merging data files, expiring snapshots, deleting old files):
-- it runs once per lake, in the daemon holding this row, and `priceadvisor lake maintain`
-- takes it too. Like the other leases the row exists from the start and is only ever UPDATEd.
INSERT INTO core.job_leases VALUES ('maintenance', NULL, TIMESTAMP '1970-01-01 00:00:00');
