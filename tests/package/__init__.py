"""Package-wide checks: lint, public API, private layer, docs, README, benchmarks, packaging,
the exception tree and docstrings."""
