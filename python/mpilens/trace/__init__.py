"""Trace mode: reading per-rank traces, the run's timeline (messages matched, collectives grouped)
and its findings. The exports of a trace (Chrome/Perfetto JSON, Parquet, OTF2) are in
mpilens.exports; trace.export keeps their old names."""
