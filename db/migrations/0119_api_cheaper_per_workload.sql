-- The `api_cheaper` alert is one series per workload (labels: workload), no longer one per
-- workload and API: when another API of the model became the cheapest, the old API's series was
-- left firing with nothing observing it. The states recorded per API are dropped; the rule's
-- next evaluation records each workload's series afresh, as for a new rule (the condition is
-- noted without a notification, so no alert already sent is sent again).
DELETE FROM core.alert_state
WHERE rule = 'api_cheaper' AND json_extract_string(labels, '$.api') IS NOT NULL;
