# `make demo` and `make test` are all the set-up a fresh machine needs: each creates .venv and installs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test check lint bench bench-quick web-demo clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,mcp,web]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m robotmem demo

test: $(STAMP)
	scripts/check

web-demo: $(STAMP)
	$(PY) -m robotmem.adapters.web.demo --db $(VENV)/web-demo.db

lint: $(STAMP)
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
