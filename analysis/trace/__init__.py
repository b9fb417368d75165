"""Everything one trace's summary holds, figures only: the sections' inputs (``nsys_inputs``,
``section``), its sections (per-phase figures, efficiency, step timeline, memory ledger, GPU
metrics, ``multi_gpu/``, and the per-trace questions' figures in ``question_figures/``), the
record types of the summary (``summary_schema``, which imports nothing of the analysis) and
``summarize``, which declares the sections and builds them. No sentence is written here (the
questions' modules write them), so this floor's code is what keys the results cache. Imports only
:mod:`analysis.load` and :mod:`analysis.core`."""
