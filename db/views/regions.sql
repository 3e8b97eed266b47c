-- regions: every known provider region with its place (providers/regions.toml).
CREATE OR REPLACE VIEW main.regions AS SELECT * FROM core.regions;
