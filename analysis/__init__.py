"""Load nsys SQLite exports of the CS336 model and answer the profiling questions."""

__version__ = "0.1.0"
