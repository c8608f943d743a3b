# Two commands do all the set-up on a fresh machine with Python 3.11+:
#   make demo   -> virtual environment + `attnphase reproduce all --quick --out reports`
#   make test   -> virtual environment + the default test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.attnphase-installed

.PHONY: setup demo test test-slow bench derive clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch first, pinned: on the project's machines this is the CPU build on local disk;
	# pyproject.toml keeps only a lower bound.
	$(BIN)/python -m pip install --disable-pip-version-check -q torch==2.13.0
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ".[test,parquet]"
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/attnphase reproduce all --quick --out reports

test: setup
	$(BIN)/python -m pytest -q

test-slow: setup
	$(BIN)/python -m pytest -q -m slow

bench: setup
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b --quick || exit 1; done

derive: setup
	$(BIN)/attnphase derive all

clean:
	rm -rf $(VENV) reports .pytest_cache .hypothesis
