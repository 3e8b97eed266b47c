-- The change log splits in two so an hourly ingest touches only what changed, not the history:
--   core.current_offers — the open interval of each key (one row per live offer);
--   core.price_closed   — closed intervals, append-only (valid_to always set);
--   core.provider_coverage — per provider, region and pricing, the latest merged run that
--                            covered it.
-- An unchanged offer is not rewritten every run: its last_seen is the later of its row's
-- last_seen and the latest run covering its region and pricing (an `ok` run covers all of the
-- provider's, a `partial` run its complete scopes). An open offer that a covering run did not
-- see would have been closed, so every covering run after valid_from saw it. The views core.current_intervals and core.price_intervals (below)
-- give the same rows and columns as the single table they replace.

CREATE TABLE core.current_offers (
    provider              VARCHAR NOT NULL,
    region                VARCHAR NOT NULL,
    zone                  VARCHAR NOT NULL DEFAULT '',
    instance_type         VARCHAR NOT NULL,
    pricing               VARCHAR NOT NULL,
    gpu_model             VARCHAR,
    gpu_name_raw          VARCHAR,
    gpu_count             DOUBLE,
    gpu_memory_gb         DOUBLE,
    vcpus                 DOUBLE,
    ram_gb                DOUBLE,
    price_hour_usd        DOUBLE NOT NULL,
    price_gpu_hour_usd    DOUBLE,
    currency              VARCHAR NOT NULL,
    price_hour_original   DOUBLE NOT NULL,
    price_basis           VARCHAR NOT NULL,
    available             BOOLEAN,
    interruption_rate     DOUBLE,
    source_url            VARCHAR,
    first_seen            TIMESTAMP NOT NULL,
    valid_from            TIMESTAMP NOT NULL,
    last_seen             TIMESTAMP NOT NULL,  -- when a run last wrote this row (see above)
    opened_run            BIGINT NOT NULL,
    last_run              BIGINT NOT NULL,
    offer_count           INTEGER,
    price_hour_median_usd DOUBLE,
    price_origin          VARCHAR DEFAULT 'published',
    price_rule            VARCHAR,
    price_date            DATE
);

CREATE TABLE core.price_closed (
    provider              VARCHAR NOT NULL,
    region                VARCHAR NOT NULL,
    zone                  VARCHAR NOT NULL DEFAULT '',
    instance_type         VARCHAR NOT NULL,
    pricing               VARCHAR NOT NULL,
    gpu_model             VARCHAR,
    gpu_name_raw          VARCHAR,
    gpu_count             DOUBLE,
    gpu_memory_gb         DOUBLE,
    vcpus                 DOUBLE,
    ram_gb                DOUBLE,
    price_hour_usd        DOUBLE NOT NULL,
    price_gpu_hour_usd    DOUBLE,
    currency              VARCHAR NOT NULL,
    price_hour_original   DOUBLE NOT NULL,
    price_basis           VARCHAR NOT NULL,
    available             BOOLEAN,
    interruption_rate     DOUBLE,
    source_url            VARCHAR,
    first_seen            TIMESTAMP NOT NULL,
    valid_from            TIMESTAMP NOT NULL,
    valid_to              TIMESTAMP NOT NULL,
    last_seen             TIMESTAMP NOT NULL,  -- final: the last run that saw this price
    opened_run            BIGINT NOT NULL,
    last_run              BIGINT NOT NULL,
    offer_count           INTEGER,
    price_hour_median_usd DOUBLE,
    price_origin          VARCHAR DEFAULT 'published',
    price_rule            VARCHAR,
    price_date            DATE
);

-- One row per (provider, region, pricing) with open offers: the latest `ok` run, or `partial`
-- run with that region (or region|pricing) complete. Failed and superseded runs cover nothing.
CREATE TABLE core.provider_coverage (
    provider  VARCHAR NOT NULL,
    region    VARCHAR NOT NULL,
    pricing   VARCHAR NOT NULL,
    last_seen TIMESTAMP NOT NULL,  -- the covering run's observation time
    last_run  BIGINT NOT NULL
);

INSERT INTO core.current_offers BY NAME
SELECT * EXCLUDE (valid_to) FROM core.price_intervals WHERE valid_to IS NULL
ORDER BY provider, region, zone, instance_type, pricing;

INSERT INTO core.price_closed BY NAME
SELECT * FROM core.price_intervals WHERE valid_to IS NOT NULL
ORDER BY valid_to, provider, region, zone, instance_type, pricing;

DROP TABLE core.price_intervals;

-- Internal views (not the public contract; main.offers and main.price_history read them).
-- core.current_intervals: the open intervals, last_seen/last_run being the later of the row's
-- own and the latest run covering it. core.price_intervals: every interval, current and
-- closed, in the old single-table shape.
CREATE VIEW core.current_intervals AS
SELECT p.* REPLACE (
        greatest(p.last_seen, c.last_seen) AS last_seen,
        CASE WHEN c.last_seen > p.last_seen THEN c.last_run ELSE p.last_run END AS last_run),
    NULL::TIMESTAMP AS valid_to
FROM core.current_offers AS p
LEFT JOIN core.provider_coverage AS c
    ON c.provider = p.provider AND c.region = p.region AND c.pricing = p.pricing;

CREATE VIEW core.price_intervals AS
SELECT * FROM core.current_intervals
UNION ALL BY NAME
SELECT * FROM core.price_closed;
