-- Alert state (Alertmanager semantics) and silences.
CREATE TABLE core.alert_state (
    fingerprint      VARCHAR PRIMARY KEY,   -- rule + labels
    rule             VARCHAR NOT NULL,
    labels           JSON NOT NULL,
    reference        DOUBLE,                -- what the next drop is measured against
    value            DOUBLE,                -- latest observation
    pending          INTEGER NOT NULL,      -- consecutive evaluations the condition held
    firing           BOOLEAN NOT NULL,
    notified_value   DOUBLE,                -- the value last notified (the next reference)
    last_notified_at TIMESTAMP,
    updated_at       TIMESTAMP NOT NULL
);

CREATE SEQUENCE core.silence_ids START 1;
CREATE TABLE core.silences (
    id         BIGINT PRIMARY KEY DEFAULT nextval('core.silence_ids'),
    matchers   JSON NOT NULL,               -- {"label": "value", ...}: all must match
    comment    VARCHAR,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
