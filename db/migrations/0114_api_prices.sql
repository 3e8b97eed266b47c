-- LLM API token prices (kind = "api" sources such as OpenRouter): not GPU offers. One row per
-- (api_provider, api_model_id) and price interval, SCD-2 like GPU prices: valid_to NULL is the
-- current price; a change closes the row and opens a new one; a model gone from a complete
-- listing is closed. Prices in US dollars per 1M tokens. model_id: the bundled model catalog's
-- id the API model maps to (NULL = unmapped, counted in the fetch run, never guessed).
CREATE TABLE core.api_prices (
    api_provider VARCHAR NOT NULL,
    api_model_id VARCHAR NOT NULL,
    model_id VARCHAR,
    name VARCHAR,
    input_usd_per_mtok DOUBLE NOT NULL,
    output_usd_per_mtok DOUBLE NOT NULL,
    cached_input_usd_per_mtok DOUBLE,
    request_usd DOUBLE,
    is_free BOOLEAN NOT NULL,
    context_length INTEGER,
    valid_from TIMESTAMP NOT NULL,
    valid_to TIMESTAMP,
    run_id BIGINT NOT NULL
);
