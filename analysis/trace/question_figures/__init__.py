"""The figures of each per-trace question, one module per question: a ``Record`` TypedDict (the
record the summary keeps under ``questions[<key>]``) and ``figures(inputs, phases)``, which makes
it from the trace's :class:`~analysis.trace.nsys_inputs.NsysInputs` and its ``phases`` section.

Figures only: the question's sentence about them is written by its module in
:mod:`analysis.questions` (``write_trace``), after the summary is made or read from the results
cache, so rewording a sentence never changes a stored summary or the cache key.
"""
