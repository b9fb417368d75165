# Two entry points for a fresh machine: `make report` and `make test`.
# `make report` installs the analyzer alone (no torch, no test tools); `make test` adds the runner
# (torch, CPU build), the Dask extra and the test tools to the same virtual environment.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
# torch 2.13.0 has a CPU build; an unpinned torch would pull a multi-GB CUDA build.
TORCH  ?= torch==2.13.0

.PHONY: install install-test report test docs

$(PY):
	$(PYTHON) -m venv $(VENV)

# An editable install leaves the project's modules uncompiled; where PYTHONDONTWRITEBYTECODE is set
# every run would compile them again (about 0.1 s CPU per analyze-nsys process), so compile them once.
COMPILE = $(PY) -m compileall -q analysis cs336_profile nsys_runs

$(VENV)/.installed-report: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e .
	$(COMPILE)
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install -q $(TORCH)
	$(PY) -m pip install -q -e '.[runner,dask,test]'
	$(COMPILE)
	touch $@ $(VENV)/.installed-report

## The analyzer and what its report needs.
install: $(VENV)/.installed-report

## Everything: the analyzer, the runner, the Dask extra and the test tools.
install-test: $(VENV)/.installed-test

# The shipped traces: 2025 handout (top level), 2026 handout, multi-GPU runs. Summaries are cached in
# report/results.db (keyed by trace content and analyzer code), so a second `make report` only renders.
TRACES = nsys_runs/traces/*.sqlite.xz nsys_runs/traces/2026/*.sqlite.xz nsys_runs/traces/multi_gpu/*.sqlite.xz

## Render the HTML report (both handout editions) from the example traces and results shipped in nsys_runs/.
report: install
	$(VENV)/bin/analyze-nsys $(TRACES) --results nsys_runs/results --out report

## Lint, then the test suite on the CPU.
test: install-test
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n 2 -q tests

## Write the documents made from the code: docs/cli-reference.md (from the commands' parsers; the runner's
## needs torch), docs/summary.schema.json and the summary outline in docs/architecture.md.
docs: install-test
	$(PY) docs/generate.py
