# `make demo` and `make test` are all the set-up a fresh machine needs: each creates .venv and installs.
# `make demo` installs the core alone (what the quick start needs); `make web-demo` adds the web extra;
# `make test` and the other targets install every extra and the test tools.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CORE_STAMP := $(VENV)/.core-stamp
WEB_STAMP := $(VENV)/.web-stamp
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test test-fast check lint bench bench-quick bench-postgres web-demo experiment experiment-quick clean

$(CORE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(CORE_STAMP)

$(WEB_STAMP): $(CORE_STAMP)
	$(PY) -m pip install --quiet -e '.[web]'
	touch $(WEB_STAMP)

$(STAMP): $(CORE_STAMP)
	$(PY) -m pip install --quiet -e '.[dev,mcp,web,gym,ros,lerobot,postgres]'
	touch $(STAMP)

demo: $(CORE_STAMP)
	$(PY) -m robotmem demo

test: $(STAMP)
	scripts/check

# The edit loop: the suite without the tests that spawn a process or a browser (`slow`), a tenth of each
# property's examples (hypothesis profile `fast`), temporary files on tmpfs when there is one (SQLite's
# fsyncs cost a disk-backed /tmp more wall time than the tests' CPU). Measured on the 2-core machine
# at load 0.8-0.9: 49-52 s wall, 41-43 s of CPU (937 tests).
# The contract suite runs on the SQLite engine only (ROBOTMEM_TEST_ENGINES=sqlite,postgres adds the
# server's variants). `make test` runs everything at full counts, on both engines.
FAST_TMPDIR ?= $(if $(wildcard /dev/shm),/dev/shm,$(or $(TMPDIR),/tmp))
FAST_ENGINES ?= $(or $(ROBOTMEM_TEST_ENGINES),sqlite)
test-fast: $(STAMP)
	TMPDIR=$(FAST_TMPDIR) ROBOTMEM_TEST_ENGINES=$(FAST_ENGINES) $(PY) -m pytest -m "not slow" --hypothesis-profile=fast

web-demo: $(WEB_STAMP)
	$(PY) -m robotmem.adapters.web.demo --db $(VENV)/web-demo.db

bench: $(STAMP)
	$(PY) -m benchmarks.run --plots
	$(PY) benchmarks/mcp_startup.py
	$(PY) benchmarks/soak.py

bench-quick: $(STAMP)
	$(PY) -m benchmarks.run --quick

# PostgreSQL at 100k and 1M beside SQLite at 100k (needs scripts/install-postgres; the first build of
# 1M takes about half an hour, cached in benchmarks/.cache/pg).
bench-postgres: $(STAMP)
	$(PY) -m benchmarks.postgres --n 100000 --n 1000000 --sqlite 100000 --repeat 15

lint: $(STAMP)
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# FetchPush experience-recall experiment, in its own venv (MuJoCo, Gymnasium-Robotics).
GYM_VENV ?= .venv-gym
GYM_PY := $(GYM_VENV)/bin/python
GYM_STAMP := $(GYM_VENV)/.installed-stamp

$(GYM_STAMP): pyproject.toml
	$(PYTHON) -m venv $(GYM_VENV)
	$(GYM_PY) -m pip install --quiet --upgrade pip
	$(GYM_PY) -m pip install --quiet -e '.[gym]'
	touch $(GYM_STAMP)

# Whole protocol end to end with small counts: 3 seeds x 20 episodes per phase (about a minute on 2 cores).
experiment-quick: $(GYM_STAMP)
	$(GYM_PY) examples/fetch_push/results.py --seeds 3 --episodes 20 --workers 2 --out build/experiment-quick

# The run in docs/experiments.md: 5 seeds x 100 episodes per phase; rewrites examples/fetch_push/results/.
experiment: $(GYM_STAMP)
	$(GYM_PY) examples/fetch_push/results.py --seeds 5 --episodes 100 --workers 2 --out examples/fetch_push/results

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache
