# One command each: `make demo` and `make test` create the environment, install, and run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install demo demo-protocols test test-fast test-interop lint bench screenshots clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "swarm needs Python 3.11 or newer; set PYTHON=python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

install: $(STAMP)

demo: install  ## offline shell workers work a task graph, then a scripted Claude teammate reviews it
	$(PY) examples/shell_team_demo.py

demo-protocols: install  ## the files layer alone: worker processes sharing a board
	$(PY) examples/protocols_demo.py

test: install  ## every test, including the real-process stress and crash tests
	$(PY) -m pytest

test-fast: install  ## everything but the slow stress tests
	$(PY) -m pytest -m "not slow"

test-interop: install  ## only the tests next to a real Claude Code 2.1.88 (installed from npm into .cache/)
	$(PY) -m pytest -m interop

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: install  ## the benchmarks of docs/protocols.md; each ends with a key=value line
	$(PY) bench/latency.py
	$(PY) bench/throughput.py
	$(PY) bench/claims.py
	$(PY) bench/spawn.py
	$(PY) bench/idle_cpu.py
	$(PY) bench/idle_requests.py
	$(PY) bench/prompt_cache.py
	$(PY) bench/dashboard.py
	$(PY) bench/interop_inbox.py

screenshots: install  ## docs/images/watch*.png: swarm watch in a tmux pane, a scripted team
	$(PY) docs/screenshots.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis *.egg-info .cache
