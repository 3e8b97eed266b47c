-- HTTP validators (ETag / Last-Modified) per provider and URL, with the body they validate
-- (zlib-compressed), so a restarted daemon or a one-off CLI fetch still makes conditional
-- requests: a 304 needs the body it stands for.
CREATE TABLE core.http_validators (
    provider      VARCHAR NOT NULL,
    url           VARCHAR NOT NULL,
    etag          VARCHAR,
    last_modified VARCHAR,
    body          BLOB NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (provider, url)
);
