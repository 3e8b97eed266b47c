"""A lake whose data files live in object storage: a local S3-compatible server (moto) with a
PostgreSQL catalog; credentials reach DuckDB through a temporary secret only."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from priceadvisor.store import lake
from tests.s3 import KEY_ID, SECRET, S3Server


def s3_lake(pg_dsn: str, server: S3Server, bucket: str, secret: str = SECRET) -> lake.Lake:
    s3 = lake.S3(
        endpoint=server.endpoint,
        region="us-east-1",
        url_style="path",
        use_ssl=False,
        key_id=KEY_ID,
        secret=secret,
    )
    return lake.Lake(catalog=f"postgres:{pg_dsn}", data_path=f"{bucket}/lake/", s3=s3)


def test_rows_written_to_s3_are_read_back_from_another_connection(
    pg_dsn: str, s3_server: S3Server, s3_bucket: str
) -> None:
    target = s3_lake(pg_dsn, s3_server, s3_bucket)
    with lake.connect(target) as con:
        con.execute("CREATE TABLE prices (id BIGINT, price DOUBLE)")
        # Enough rows that they go to a Parquet file, not inlined into the catalog.
        con.execute("INSERT INTO prices SELECT i, i / 100 FROM range(20000) t(i)")
    with lake.connect(target, read_only=True) as con:
        assert con.execute("SELECT count(*), sum(id) FROM prices").fetchone() == (
            20000,
            sum(range(20000)),
        )
    bucket = s3_bucket.removeprefix("s3://")
    assert any(
        key.startswith("lake/") and key.endswith(".parquet") for key in s3_server.keys(bucket)
    )


def test_the_secret_is_in_no_error_listing_or_catalog(
    pg_dsn: str, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    target = s3_lake(pg_dsn, s3_server, s3_bucket)
    with lake.connect(target) as con:
        con.execute("CREATE TABLE t AS SELECT range AS id FROM range(20000)")
        secrets = con.execute("SELECT secret_string FROM duckdb_secrets()").fetchall()
        catalog = con.execute("SELECT * FROM __ducklake_metadata_lake.ducklake_metadata")
        metadata = str(catalog.fetchall())
    assert secrets and all(SECRET not in row[0] for row in secrets)  # DuckDB redacts it
    assert SECRET not in metadata and KEY_ID not in metadata
    # A write the server refuses (no such bucket): the error names the URL, not the secret.
    missing = lake.Lake(str(tmp_path / "c.ducklake"), "s3://no-such-bucket/lake/", s3=target.s3)
    with pytest.raises(duckdb.Error) as caught, lake.connect(missing) as con:
        con.execute("CREATE TABLE u AS SELECT range AS id FROM range(20000)")
    assert "no-such-bucket" in str(caught.value)
    assert SECRET not in str(caught.value)
