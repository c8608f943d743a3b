# Two commands do all the set-up on a fresh machine with Python 3.11+:
#   make demo   -> virtual environment + `attnphase reproduce --out reports`
#   make test   -> virtual environment + the default test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.attnphase-installed
DOCS_STAMP := $(VENV)/.attnphase-docs-installed
PIP    := $(BIN)/python -m pip install --disable-pip-version-check -q

.PHONY: setup demo test test-slow examples docs docs-serve bench derive clean

# What the default suite needs: the test extra (pytest, pytest-xdist, pytest-timeout, hypothesis, arviz), the cluster
# extra (dask, for the sweep-on-a-cluster tests) and parquet (the store's parquet export).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch first, pinned: on the project's machines this is the CPU build on local disk;
	# pyproject.toml keeps only a lower bound.
	$(PIP) torch==2.13.0
	$(PIP) -e ".[test,cluster,parquet]"
	touch $(STAMP)

$(DOCS_STAMP): $(STAMP)
	$(PIP) -e ".[docs]"
	touch $(DOCS_STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/attnphase reproduce --out reports

# The default suite on both cores: two pytest-xdist workers, each stealing queued tests from the other when
# it runs dry, so that the few long tests do not leave one core idle at the end. A test still running after
# 600 s (the longest take ~20 s) fails with the stacks of its threads instead of holding up the suite.
test: setup
	$(BIN)/python -m pytest -q -n 2 --dist worksteal --timeout 600

test-slow: setup
	$(BIN)/python -m pytest -q -m slow

# Every examples/*.py at small size, each in a scratch directory (examples/run_examples.py).
examples: setup
	$(BIN)/python examples/run_examples.py

# The documentation site in site/; a warning (a broken link, a missing page) fails the build.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

bench: setup
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b --quick || exit 1; done

derive: setup
	$(BIN)/attnphase derive all

clean:
	rm -rf $(VENV) reports site .pytest_cache .hypothesis
