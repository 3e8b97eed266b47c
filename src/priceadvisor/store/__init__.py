"""Where data is kept: DuckDB migrations and views, the change-log ingest, reads, export."""
