-- advice: the latest ranking per workload (DESIGN §4, §5; contract).
CREATE OR REPLACE VIEW main.advice AS SELECT * FROM core.advice;
