-- The latest ranking of current offers per workload, written by `advise` and by
-- the daemon after each fetch cycle; replaced whole each time (top N per workload).
CREATE TABLE core.advice (
    workload        VARCHAR NOT NULL,
    task            VARCHAR NOT NULL,
    rank            INTEGER NOT NULL,
    provider        VARCHAR NOT NULL,
    region          VARCHAR NOT NULL,
    zone            VARCHAR,
    country         VARCHAR,
    instance_type   VARCHAR NOT NULL,
    gpu_model       VARCHAR NOT NULL,
    gpu_count       DOUBLE NOT NULL,
    pricing         VARCHAR NOT NULL,
    price_hour_usd  DOUBLE NOT NULL,
    cost_usd        DOUBLE,            -- training: the whole run, spot overhead included
    usd_per_mtok    DOUBLE,            -- serving: per million output tokens
    monthly_usd     DOUBLE,            -- serving: always-on replicas for the monthly volume
    replicas        INTEGER,
    tokens_per_s    DOUBLE NOT NULL,   -- training: tokens/s trained; serving: output tokens/s
    hours           DOUBLE,            -- training: wall hours of the run
    ttft_ms         DOUBLE,
    tpot_ms         DOUBLE,
    binding         VARCHAR NOT NULL,
    low             DOUBLE NOT NULL,   -- range of cost_usd or usd_per_mtok
    high            DOUBLE NOT NULL,
    spot_overhead   DOUBLE NOT NULL,   -- cost multiplier for checkpoint/restart on spot
    computed_at     TIMESTAMP NOT NULL
);
