-- advice: the latest ranking per workload (a public contract, documented in docs/sql.md).
CREATE OR REPLACE VIEW main.advice AS SELECT * FROM core.advice;
