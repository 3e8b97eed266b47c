-- alerts: the state of every alert.
CREATE OR REPLACE VIEW main.alerts AS
SELECT fingerprint, rule, labels, reference, value, pending, firing, notified_value,
    last_notified_at, updated_at
FROM core.alert_state;
