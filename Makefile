# Two entry points for a fresh machine: `make report` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
# torch 2.13.0 has a CPU build; an unpinned torch would pull a multi-GB CUDA build.
TORCH  ?= torch==2.13.0

.PHONY: install install-test report test

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH)
	$(PY) -m pip install -q -e '.[runner,test]'
	touch $@

install: $(VENV)/.installed

# The shipped traces: 2025 handout (top level), 2026 handout, multi-GPU runs. Summaries are cached in
# report/results.db (keyed by trace content and analyzer code), so a second `make report` only renders.
TRACES = nsys_runs/traces/*.sqlite.xz nsys_runs/traces/2026/*.sqlite.xz nsys_runs/traces/multi_gpu/*.sqlite.xz

## Render the HTML report (both handout editions) from the example traces and results shipped in nsys_runs/.
report: install
	$(VENV)/bin/analyze-nsys $(TRACES) --results nsys_runs/results --format html,md,json --out report
	@echo "open report/index.html"

## Run the test suite on the CPU.
test: install
	$(PY) -m pytest -n 2 -q tests
