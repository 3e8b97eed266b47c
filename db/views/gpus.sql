-- gpus: the canonical accelerator catalog with specs (providers/gpus.toml).
CREATE OR REPLACE VIEW main.gpus AS SELECT * FROM core.gpus;
