-- Whether a run fetched live prices or replayed the recorded responses shipped with the package
-- (`--offline`, `demo`): recorded prices must never pass for live ones. 'live' | 'recorded';
-- NULL for runs made before this column existed (they cannot be told apart any more).
ALTER TABLE core.fetch_runs ADD COLUMN source VARCHAR;
