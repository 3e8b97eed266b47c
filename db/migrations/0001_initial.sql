-- Tables behind the public views. Tables live in schema `core`; users query the
-- views in `main` (db/views/*.sql), which are the contract. Every timestamp is naive UTC.

CREATE SEQUENCE core.fetch_run_ids START 1;

CREATE TABLE core.fetch_runs (
    run_id          BIGINT PRIMARY KEY DEFAULT nextval('core.fetch_run_ids'),
    provider        VARCHAR NOT NULL,
    started_at      TIMESTAMP NOT NULL,
    finished_at     TIMESTAMP,
    status          VARCHAR NOT NULL,      -- running | ok | partial | failed | skipped | abandoned
    offers_seen     INTEGER,               -- valid quotes in the snapshot (after de-duplication)
    offers_changed  INTEGER,               -- intervals closed and re-opened at a new price
    offers_new      INTEGER,               -- keys with no open interval before this run
    offers_closed   INTEGER,               -- open intervals closed because the key vanished
    offers_rejected INTEGER,               -- quotes refused by validation (see rejected_quotes)
    unmapped        INTEGER,               -- valid quotes whose GPU name maps to no canonical id
    http_requests   INTEGER,
    http_bytes      BIGINT,
    error           VARCHAR,
    complete_scopes VARCHAR[],             -- regions complete in a partial run
    pid             INTEGER,               -- the process that ran it (abandoned-run detection)
    host            VARCHAR
);

-- The change log (SCD type 2): one row per price interval of a key
-- (provider, region, zone, instance_type, pricing). valid_to IS NULL while current.
CREATE TABLE core.price_intervals (
    provider            VARCHAR NOT NULL,
    region              VARCHAR NOT NULL,
    zone                VARCHAR NOT NULL DEFAULT '',
    instance_type       VARCHAR NOT NULL,
    pricing             VARCHAR NOT NULL,
    gpu_model           VARCHAR,
    gpu_name_raw        VARCHAR,
    gpu_count           DOUBLE,
    gpu_memory_gb       DOUBLE,
    vcpus               DOUBLE,
    ram_gb              DOUBLE,
    price_hour_usd      DOUBLE NOT NULL,
    price_gpu_hour_usd  DOUBLE,
    currency            VARCHAR NOT NULL,
    price_hour_original DOUBLE NOT NULL,
    price_basis         VARCHAR NOT NULL,
    available           BOOLEAN,
    interruption_rate   DOUBLE,
    source_url          VARCHAR,
    first_seen          TIMESTAMP NOT NULL,
    valid_from          TIMESTAMP NOT NULL,
    valid_to            TIMESTAMP,
    last_seen           TIMESTAMP NOT NULL,
    opened_run          BIGINT NOT NULL,
    last_run            BIGINT NOT NULL
);

-- Quotes refused by validation: the first 1000 of each run, for `doctor` and debugging; the
-- full count is fetch_runs.offers_rejected.
CREATE TABLE core.rejected_quotes (
    run_id        BIGINT NOT NULL,
    provider      VARCHAR NOT NULL,
    region        VARCHAR,
    instance_type VARCHAR,
    pricing       VARCHAR,
    price         DOUBLE,
    currency      VARCHAR,
    reason        VARCHAR NOT NULL
);

CREATE TABLE core.gpus (
    gpu_model            VARCHAR PRIMARY KEY,
    name                 VARCHAR NOT NULL,
    vendor               VARCHAR NOT NULL,
    family               VARCHAR NOT NULL,
    variant              VARCHAR,
    architecture         VARCHAR,
    memory_gb            DOUBLE NOT NULL,
    memory_type          VARCHAR,
    memory_bandwidth_gbs DOUBLE,
    bf16_dense_tflops    DOUBLE,
    fp16_dense_tflops    DOUBLE,
    fp8_dense_tflops     DOUBLE,
    int8_dense_tops      DOUBLE,
    fp32_tflops          DOUBLE,
    tdp_w                DOUBLE,
    interconnect         VARCHAR,
    nvlink_bandwidth_gbs DOUBLE,
    form_factor          VARCHAR,
    launch_year          INTEGER,
    approx_list_price_usd DOUBLE,
    source               VARCHAR,
    notes                VARCHAR
);

CREATE TABLE core.regions (
    provider     VARCHAR NOT NULL,
    region       VARCHAR NOT NULL,
    city         VARCHAR,
    country      VARCHAR,
    country_name VARCHAR,
    continent    VARCHAR,
    is_eu        BOOLEAN,
    PRIMARY KEY (provider, region)
);

-- ECB reference rates: `per_eur` units of `currency` for one euro on `rate_date`.
CREATE TABLE core.fx_rates (
    rate_date  DATE NOT NULL,
    currency   VARCHAR NOT NULL,
    per_eur    DOUBLE NOT NULL,
    source     VARCHAR NOT NULL,
    fetched_at TIMESTAMP NOT NULL,
    PRIMARY KEY (rate_date, currency)
);

-- The outbox of every alert and digest.
CREATE SEQUENCE core.notification_ids START 1;
CREATE TABLE core.notifications (
    id              BIGINT PRIMARY KEY DEFAULT nextval('core.notification_ids'),
    kind            VARCHAR NOT NULL,      -- alert | digest | test
    channel         VARCHAR NOT NULL,      -- email | slack
    key             VARCHAR NOT NULL UNIQUE,  -- idempotency key
    payload         JSON,
    created_at      TIMESTAMP NOT NULL,
    sent_at         TIMESTAMP,
    status          VARCHAR NOT NULL,      -- queued | sent | failed
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP,
    last_error      VARCHAR
);
