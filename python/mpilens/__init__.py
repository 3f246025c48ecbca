"""mpilens: insight into the performance of MPI applications through low-level metrics."""

__version__ = "0.1.0"
