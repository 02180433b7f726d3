# The README's two commands: `make demo` and `make test`. Both set up .venv from nothing first,
# installing the pinned versions in requirements.lock (written by `make lock` from pyproject.toml).
VENV   ?= .venv
PYTHON ?= python3
# torch and the torchvision built for it, installed before the lock (tools/lock.py resolves against
# these pins and leaves both out of requirements.lock): the registry's default builds, which run on
# the CPU and on a GPU alike (torchvision does not import beside the CPU-only torch 2.13.0 build).
TORCH  ?= torch==2.14.1 torchvision==0.29.1
PY      = $(VENV)/bin/python
PYTEST_ARGS ?=
LATEST ?= .venv-latest

.PHONY: setup demo test test-latest lint-imports bench lock clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q $(TORCH)
	$(PY) -m pip install -q -r requirements.lock
	# compat mode (a .pth with the checkout's root) so that Hydra's plugin discovery, which lists
	# hydra_plugins/ with pkgutil, sees hydra_plugins/yoloprof_sweeper: setuptools' default
	# editable finder imports it but cannot list it, so every fresh process lost the sweeper.
	$(PY) -m pip install -q --no-deps -e . --config-settings editable_mode=compat
	# Byte-compiled as pip does for an installed package: where PYTHONDONTWRITEBYTECODE is set, a
	# checkout would otherwise compile every module again in every run (0.04 s of each command).
	$(PY) -m compileall -q yoloprof
	touch $@

# The main job on the embedded defaults: the CPU demo sweep, then its analysis.
demo: setup
	$(VENV)/bin/yoloprof sweep +sweep=demo

# The import contract (.importlinter: the layers as a DAG) first, then ruff and mypy (configured in
# pyproject.toml; mypy keeps its cache in .mypy_cache: about 20 s of CPU cold, half of it reading
# torch's stubs, and under 1 s warm; ruff 0.1 s),
# then the tests.
# pytest's plugins are named (-p xdist.plugin) instead of loaded from every installed package's
# entry points: pytest rewrites the asserts of each such package, so Hydra's and Hypothesis's
# hundreds of modules were rewritten on import in every worker (start-up 3.5 -> 1.7 s per worker,
# and the controller no longer imports Hypothesis to end the run). Neither plugin is used here.
# PYTHONDONTWRITEBYTECODE is cleared for the tests alone: pytest keeps its assert-rewritten test
# modules in tests/__pycache__ (ignored by git) only where bytecode may be written, and each worker
# otherwise rewrote and compiled all of them again in every run (3.6 s of CPU per worker).
PYTEST = PYTHONDONTWRITEBYTECODE= PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(PY) -m pytest -p xdist.plugin
test: setup
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff check yoloprof tests bench tools hydra_plugins
	$(VENV)/bin/mypy
	$(PYTEST) -q -n auto $(PYTEST_ARGS)

lint-imports: setup
	$(VENV)/bin/lint-imports --no-cache

# The newest versions pyproject.toml allows, in their own venv: how an upgrade is caught on purpose.
test-latest:
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install -q $(TORCH)
	$(LATEST)/bin/python -m pip install -q --upgrade --upgrade-strategy eager -e ".[test,submitit,joblib,optuna,ultralytics,libreyolo]" $(TORCH)
	$(LATEST)/bin/lint-imports --no-cache
	PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(LATEST)/bin/python -m pytest -p xdist.plugin -q -n auto $(PYTEST_ARGS)

# A deliberate upgrade of the pins: run `make test` afterwards and commit both files.
lock: setup
	$(PY) -m pip install -q uv
	TORCH="$(TORCH)" $(PY) tools/lock.py

bench: setup
	for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) $(LATEST) runs outputs multirun .pytest_cache .mypy_cache .ruff_cache
