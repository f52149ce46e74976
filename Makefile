# Two commands set up a fresh machine: `make demo` (the main job) and `make test` (what CI runs).
# The virtual environment lives outside the checkout so that clean clones (CI) reuse it; it is
# rebuilt whenever pyproject.toml changes.

SHELL := /bin/bash
VENV ?= $(HOME)/.cache/evallens/venv
PYTHON ?= python3
DEPS_HASH := $(shell sha256sum pyproject.toml | cut -c1-16)
STAMP := $(VENV)/.deps-$(DEPS_HASH)
BIN := $(VENV)/bin

# Torch and vLLM on two shared cores: more threads are slower, sometimes 30x.
export OMP_NUM_THREADS := 1
export RAGAS_DO_NOT_TRACK := true
export HF_HUB_OFFLINE := 1

# pip and setuptools are not ours to warn about: errors only (-qq), no version nag, no build warnings.
PIP := PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONWARNINGS=ignore $(BIN)/python -m pip

.PHONY: install demo test lint typecheck imports unit

$(STAMP):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing evallens and its dependencies into $(VENV) (once per pyproject.toml change)"
	@$(PIP) install -qq --upgrade pip wheel
	@$(PIP) install -qq -e '.[service,evals,dashboard,dev]'
	@# pip pulls builds of these that do not match CPU torch; they break transformers' imports
	@$(PIP) uninstall -qq --yes torchvision torchaudio torchcodec
	rm -f $(VENV)/.deps-* && touch $(STAMP)

install: $(STAMP)
	@# point the editable install at this checkout (cheap; the venv may serve several clones)
	@$(PIP) install -qq --no-deps --no-build-isolation -e . >/dev/null 2>&1

demo: install
	$(BIN)/evallens demo

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

imports: install
	$(BIN)/lint-imports

test: lint typecheck imports
	@# a private temp root: concurrent pytest runs prune each other's default one; the slowest tests
	@# are listed at the end so the run's budget (well under 30 minutes) can be watched. Two workers
	@# (CI has two cores), each module on one (its module-scoped stack starts once), in the order
	@# tests/conftest.py gives (the slow modules first). Not loadgroup: on pytest 9.2 xdist 3.8 drops
	@# its groups silently (pytest-dev/pytest-xdist#1386).
	$(BIN)/pytest -n 2 --dist loadfile --no-loadscope-reorder --basetemp=$$(mktemp -d /tmp/evallens-pytest-XXXXXX) --durations=30

unit: install
	$(BIN)/pytest -m unit
