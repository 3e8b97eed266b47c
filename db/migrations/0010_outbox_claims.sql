-- Outbox claims: a deliverer claims a row (claimed_until = now + lease) before sending it, so
-- two deliverers (the daemon's jobs, a CLI `digest --send`) never send the same row; a claim
-- left by a crashed process expires and the row is retried. parts_sent counts the Slack
-- payloads of a split message already accepted, so a retry resumes after them.
ALTER TABLE core.notifications ADD COLUMN claimed_until TIMESTAMP;
ALTER TABLE core.notifications ADD COLUMN parts_sent INTEGER DEFAULT 0;
