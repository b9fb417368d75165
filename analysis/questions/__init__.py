"""One module per question of the report; each says which inputs it needs and answers plainly
when a trace or results file cannot answer it. ``question.py`` declares how a question is written,
``registry.py`` lists them, ``records.py`` holds the plain data the render layer receives, and
``shared/`` what several answers share that is not a question.

The nsys questions (``nsys_a`` .. ``nsys_e``) are answered per trace too: their figures are
computed in :mod:`analysis.trace.question_figures` (the trace summary's ``questions`` section),
their one-trace sentences here (``write_trace``), added to a summary by ``sentences.py``
(:func:`~analysis.questions.sentences.with_sentences`).
"""
