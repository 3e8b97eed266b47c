-- notifications: every alert and digest, sent or pending (DESIGN §4, contract).
CREATE OR REPLACE VIEW main.notifications AS
SELECT id, kind, channel, key, created_at, sent_at, status, attempts, last_error
FROM core.notifications;
