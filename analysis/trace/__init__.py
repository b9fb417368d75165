"""Everything one trace's summary holds: the questions' inputs (``nsys_inputs``), its sections
(per-phase figures, efficiency, step timeline, memory ledger, GPU metrics, ``multi_gpu/``), the
record types of the summary (``summary_schema``, which imports nothing of the analysis) and
``summarize``, which puts them together. Imports only :mod:`analysis.load` and :mod:`analysis.core`."""
