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

## Render the HTML report from the example traces and results shipped in nsys_runs/.
report: install
	$(VENV)/bin/analyze-nsys nsys_runs/traces/*.sqlite.xz --results nsys_runs/results --format html,md,json --out report
	@echo "open report/index.html"

## Run the test suite on the CPU.
test: install
	$(PY) -m pytest -n 2 -q tests
