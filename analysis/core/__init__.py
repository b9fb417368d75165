"""The rules every figure is made by: which NVTX range a kernel belongs to (``attribution``), the
run's structure and the labels of every operation (``structure``, ``phases``), kernel categories
and labels (``classify``, ``kernel_names``), interval arithmetic, model FLOPs and GPU peaks, the
run's record (``timings``), the check of users' numbers, run labels (``runs``), the words
numbers and names are written with (``text``) and the one way files are written (``safe_write``).
Imports only :mod:`analysis.load`."""
