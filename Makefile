# Kustodian developer commands. Everything runs from a local virtualenv (.venv).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: venv demo test lint bench bench-smoke bench-gate manifests docs dist dist-check changelog-section version clean

# pip's own lines ("Collecting ...", "Installing collected packages ...") are the progress:
# about a minute on a fresh machine, so nothing here is silent. The editable install compiles
# setup.py's extension into the source tree once: a changed .pyx needs it again (seconds, the
# dependencies are there), hence setup.py and the .pyx among the prerequisites.
$(BIN)/kustodian: pyproject.toml setup.py kustodian/policy/capacity/_native.pyx
	@echo "venv: creating $(VENV) with $$($(PY) --version)"
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	@echo "venv: installing kustodian with its dev and bench extras (about a minute)"
	$(BIN)/pip install --progress-bar off -e '.[dev,bench]'
	@$(BIN)/python -c 'import kustodian.policy.capacity._native' 2>/dev/null || echo "venv: the compiled \
	module kustodian.policy.capacity._native was not built (no gcc or Python headers?): pure Python"
	@echo "venv: ready ($(BIN)/kustodian)"
	@touch $@

venv: $(BIN)/kustodian

## make demo: throwaway API server + the webhook + the user stories played with kubectl
demo: venv
	$(BIN)/python -m kustodian.cli.demo

## make test: the whole suite, real API tier included (what CI runs), in TEST_WORKERS processes
## (pytest-xdist, a file per worker at a time: a module's API server and fixtures stay in one process)
TEST_WORKERS ?= 2
test: venv
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

## make manifests: deploy/kustodian.yaml, the chart rendered for installing without Helm
manifests: venv
	$(BIN)/python -m docsgen.manifests

## make docs: the reference pages committed in docs/reference/ (a test fails when one is stale)
docs: venv
	$(BIN)/python -m docsgen

## make dist: wheel, sdist, chart package, image (OCI archive), SBOM and SHA256SUMS into dist/
dist: venv
	$(BIN)/python -m release.dist all dist

## make dist-check: prove dist/ (twine, helm lint, versions, the wheel alone in a fresh venv)
dist-check: venv
	$(BIN)/python -m release.verify dist

## make changelog-section VERSION=0.2.0: that version's CHANGELOG section (the release notes)
changelog-section:
	@$(PY) -m release.changelog notes "$(or $(VERSION),$$($(PY) -m release.version))"

## make version VERSION=X.Y.Z: the one version written everywhere (pyproject, chart, Dockerfile, docs)
version: venv
	$(BIN)/python -m release.version set "$(VERSION)"
	$(MAKE) manifests docs
	$(BIN)/python -m release.version check

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/actionlint .github/workflows/*.yaml

bench: venv
	$(BIN)/python -m bench

bench-smoke: venv
	$(BIN)/python -m bench --smoke --out '' --plot '' --scale-plot '' --growth-plot ''

## make bench-gate: HEAD against the previous release point, side by side (bench/gate.py); fails on a regression
bench-gate: venv
	$(BIN)/python -m bench.gate

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache dist
