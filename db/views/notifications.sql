-- notifications: every alert and digest, sent or pending (a public contract, documented in docs/sql.md).
CREATE OR REPLACE VIEW main.notifications AS
SELECT id, kind, channel, key, created_at, sent_at, status, attempts, last_error
FROM core.notifications;
