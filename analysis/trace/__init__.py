"""Everything one trace's summary holds: the questions' inputs (``nsys_inputs``), its sections
(per-phase figures, efficiency, step timeline, memory ledger, GPU metrics, ``multi_gpu/``), the
summary's types (``summary_schema``) and ``summary``, which puts them together."""
