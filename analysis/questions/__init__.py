"""One module per question of the report; each says which inputs it needs and answers plainly
when a trace or results file cannot answer it. ``question.py`` declares how a question is written,
``registry.py`` lists them, ``records.py`` holds the plain data the render layer receives, and
``shared/`` what several answers share that is not a question.

The nsys questions (``nsys_a`` .. ``nsys_e``) read one
:class:`~analysis.trace.nsys_inputs.NsysInputs` per trace; :func:`analysis.app.analyze.analyze_trace`
builds it and assembles their answers into the trace summary.
"""
