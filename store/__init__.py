"""Persistence: schema, the store folder (Parquet + manifest), ingesters, the job queue, the demo store."""
