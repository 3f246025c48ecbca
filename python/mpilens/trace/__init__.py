"""Trace mode: reading per-rank traces, the run's timeline (messages matched, collectives grouped),
findings, and exports (Chrome/Perfetto JSON, Parquet, OTF2)."""
