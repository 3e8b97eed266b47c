-- silences: label matchers that mute alerts until they expire.
CREATE OR REPLACE VIEW main.silences AS
SELECT id, matchers, comment, created_at, expires_at, expires_at > now()::TIMESTAMP AS active
FROM core.silences;
