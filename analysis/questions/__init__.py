"""One module per question of the report; each says which inputs it needs and answers plainly
when a trace or results file cannot answer it.

The nsys questions (``nsys_a`` .. ``nsys_e``, ``phase_breakdown``, ``efficiency``, ``diff``) read
one :class:`~analysis.questions.nsys_inputs.NsysInputs` per trace; :func:`analysis.summary.analyze_trace`
builds it and assembles their answers into the trace summary.
"""
