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

.PHONY: install demo test lint typecheck imports unit

$(STAMP):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip wheel
	$(BIN)/python -m pip install --quiet -e '.[service,evals,dashboard,dev]'
	@# pip pulls builds of these that do not match CPU torch; they break transformers' imports
	$(BIN)/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
	rm -f $(VENV)/.deps-* && touch $(STAMP)

install: $(STAMP)
	@# point the editable install at this checkout (cheap; the venv may serve several clones)
	@$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e . >/dev/null 2>&1

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
	@# a private temp root: concurrent pytest runs prune each other's default one
	$(BIN)/pytest --basetemp=$$(mktemp -d /tmp/evallens-pytest-XXXXXX)

unit: install
	$(BIN)/pytest -m unit
