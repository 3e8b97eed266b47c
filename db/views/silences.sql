-- silences: label matchers that mute alerts until they expire. Times are naive UTC: `active`
-- compares with now in UTC (now()::TIMESTAMP would be in the session's, i.e. the host's, zone).
CREATE OR REPLACE VIEW main.silences AS
SELECT id, matchers, comment, created_at, expires_at,
    expires_at > (now() AT TIME ZONE 'UTC') AS active
FROM core.silences;
