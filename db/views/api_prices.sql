-- api_prices: LLM API token prices with history (valid_to NULL = current), in US dollars per
-- 1M tokens; model_id is the bundled model catalog's id (NULL = unmapped).
CREATE OR REPLACE VIEW main.api_prices AS
SELECT
    api_provider,
    api_model_id,
    model_id,
    name,
    input_usd_per_mtok,
    output_usd_per_mtok,
    cached_input_usd_per_mtok,
    request_usd,
    is_free,
    context_length,
    valid_from,
    valid_to
FROM core.api_prices;
