# The README's two commands: `make demo` and `make test`. Both set up .venv from nothing first.
VENV   ?= .venv
PYTHON ?= python3
# The CPU build of torch (no multi-GB CUDA download); on a GPU box: make TORCH='torch' setup
TORCH  ?= torch==2.13.0
PY      = $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: setup demo test bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[test,submitit]"
	touch $@

# The main job on the embedded defaults: the CPU demo sweep, then its analysis.
demo: setup
	$(VENV)/bin/yoloprof sweep +sweep=demo

test: setup
	$(PY) -m pytest -q $(PYTEST_ARGS)

bench: setup
	for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) runs outputs multirun .pytest_cache
