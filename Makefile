# Kustodian developer commands. Everything runs from a local virtualenv (.venv).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: venv demo test lint bench bench-smoke clean

$(BIN)/kustodian: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -e '.[dev,bench]'
	@touch $@

venv: $(BIN)/kustodian

## make demo: throwaway API server + the webhook + the user stories played with kubectl
demo: venv
	$(BIN)/python -m kustodian.cli.demo

## make test: the whole suite, real API tier included (what CI runs)
test: venv
	$(BIN)/python -m pytest -q

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: venv
	$(BIN)/python -m bench

bench-smoke: venv
	$(BIN)/python -m bench --smoke --out '' --plot ''

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
