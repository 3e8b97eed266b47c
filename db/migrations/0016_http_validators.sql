-- HTTP validators (ETag / Last-Modified) per URL, so a restarted daemon or a one-off CLI fetch
-- still makes conditional requests (collect/http.py ValidatorCache).
CREATE TABLE core.http_validators (
    url           VARCHAR PRIMARY KEY,
    etag          VARCHAR,
    last_modified VARCHAR,
    updated_at    TIMESTAMP NOT NULL
);
