"""Reports of a run: text (mpiP-like) and, later, HTML."""
