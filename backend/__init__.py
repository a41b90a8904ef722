"""Computation and inference: metrics, tags, statistics, policies, sampling, decoding, adapters, CLI."""
