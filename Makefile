# Two entry points: `make demo` (set up + run the demo) and `make test` (set up + run the tests:
# `make lint`, ruff alone, then pytest).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache

.PHONY: setup demo test lint clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(VENV)/bin/vjdemo

lint: setup
	$(PY) -m ruff check vjboost tests tools

test: lint
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) .numba_cache .pytest_cache
