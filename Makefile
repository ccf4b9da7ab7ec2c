# EarlyDx developer targets. `make demo` and `make test` are the README's contract with a new user:
# both create the virtual environment when it is missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k judge"`.
PYTEST_ARGS ?=
DATA ?= synthetic

.PHONY: env vllm-env demo test test-fast lint format clean

# The CPU build of torch is pinned first (extra `cpu`), so that nothing pulls a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[dev,cpu]"
	touch $@

env: $(VENV)/.installed

# A separate environment with the CPU build of vLLM for the integration tests (a real `vllm serve`);
# the script is idempotent and returns at once when it is already set up.
vllm-env:
	bash .ci/setup_vllm.sh

demo: env
	$(PY) -m eval.pipeline experiment=demo dataset=$(DATA)

test: env vllm-env
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: env
	$(PY) -m pytest -m "not slow and not integration and not multiprocess" $(PYTEST_ARGS)

lint: env
	$(VENV)/bin/ruff check .

format: env
	$(VENV)/bin/ruff format .

clean:
	rm -rf outputs .pytest_cache
