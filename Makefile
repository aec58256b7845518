# One command each: `make demo` and `make test` create the environment, install, and run.
# The interpreter the environment is made with (PYTHON=... picks another): the system's own
# /usr/bin/python3 when it is 3.11 or newer and can make a venv, else python3 on PATH. A
# distribution's Python is built with profile-guided and link-time optimisation, where a pyenv
# or source build usually is not (as on this project's machines, where pyenv's comes first on
# PATH): docs/perf-log.md has what it changes for the test suite
FIT_PYTHON = import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))
ifeq ($(origin PYTHON),undefined)
PYTHON := $(firstword $(foreach p,/usr/bin/python3 python3,$(shell $(p) -c '$(FIT_PYTHON)' >/dev/null 2>&1 && echo $(p))) python3)
endif
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
RUNTIME_STAMP := $(VENV)/.runtime-stamp
# pip's build backend prints an "Editable installation" banner on stderr: kept in a log, shown
# only if the install fails
PIP_INSTALL = $(PY) -m pip install --quiet --disable-pip-version-check
QUIETLY = 2>$(VENV)/pip.log || { cat $(VENV)/pip.log >&2; exit 1; }

.PHONY: install install-runtime bytecode postgresql ripgrep chromium bubblewrap demo demo-protocols test test-unit test-fast test-pg test-interop lint shapes bench screenshots clean

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "swarm needs Python 3.11 or newer; set PYTHON=python3.11")'
	$(PYTHON) -m venv $(VENV)

# what swarm itself needs (make demo): no test or lint tools
$(RUNTIME_STAMP): pyproject.toml | $(PY)
	@echo "installing swarm into $(VENV)"
	@$(PIP_INSTALL) -e . $(QUIETLY)
	@touch $(RUNTIME_STAMP)

# everything the tests, the linters and the benchmarks need too
$(STAMP): pyproject.toml | $(PY)
	@echo "installing swarm and its development tools into $(VENV)"
	@$(PIP_INSTALL) -e ".[dev]" $(QUIETLY)
	@touch $(STAMP) $(RUNTIME_STAMP)

install-runtime: $(RUNTIME_STAMP)

install: $(STAMP)

# swarm starts many short Python processes (each teammate, each CLI command). Where
# PYTHONDONTWRITEBYTECODE is set (as in many containers), none of them writes the bytecode of
# swarm's own modules, so each compiled them all again at start: compiled once here instead
# (Python still reads .pyc files with that variable set; a changed source is compiled anew)
bytecode: | $(PY)
	@$(PY) -m compileall -q -j 0 swarm teammate protocols tests bench examples

postgresql:  ## PostgreSQL's server binaries for tests/pg (Debian's package, only when initdb is missing)
	@bash .ci/install-postgresql

ripgrep:  ## ripgrep for the Glob and Grep tests and bench/search.py (Debian's package, only when rg is missing)
	@bash .ci/install-ripgrep

chromium:  ## Chromium for swarm web's browser tests (Debian's package, only when chromium is missing)
	@bash .ci/install-chromium

bubblewrap:  ## bubblewrap for the sandbox of teammates' commands (Debian's package, only when bwrap is missing)
	@bash .ci/install-bubblewrap

demo: install-runtime bytecode  ## offline shell workers work a task graph, then a scripted Claude teammate reviews it
	$(PY) examples/shell_team_demo.py

demo-protocols: install-runtime bytecode  ## the files layer alone: worker processes sharing a board
	$(PY) examples/protocols_demo.py

# four at a time keep two cores busy; each worker is handed one test at a time, in the order
# tests/conftest.py sorts them (the long ones first), so the long tests run side by side from
# the start and the short ones fill the gaps at the end (worksteal split the list into four
# runs at the start: one worker got every long test and the run ended on it)
TEST_WORKERS ?= 4
XDIST = -n $(TEST_WORKERS) --dist load --maxschedchunk 1

# tests/pg start PostgreSQL servers of their own; with SWARM_REQUIRE_POSTGRESQL=1 a missing server
# is a failure, not a skip
test: install bytecode postgresql ripgrep chromium bubblewrap  ## every test (tests/unit, contract, processes, stress, interop, pg), $(TEST_WORKERS) at a time
	SWARM_REQUIRE_POSTGRESQL=1 $(PY) -m pytest $(XDIST) --durations=25 tests

test-unit: install bytecode  ## the in-process tests, and the store contract on files (about a minute on 2 cores)
	$(PY) -m pytest $(XDIST) tests/unit
	$(PY) -m pytest $(XDIST) tests/contract -k files

test-fast: install bytecode  ## unit and process tests, without the slow ones and the stress folder
	$(PY) -m pytest $(XDIST) -m "not slow" tests/unit tests/contract tests/processes

test-pg: install bytecode postgresql  ## the PostgreSQL store against real servers (tests/pg, the store contract, and the lead scenarios on two hosts)
	SWARM_REQUIRE_POSTGRESQL=1 $(PY) -m pytest $(XDIST) tests/pg tests/contract
	SWARM_REQUIRE_POSTGRESQL=1 $(PY) -m pytest $(XDIST) tests/processes/test_scenarios.py -k postgresql

test-interop: install bytecode  ## only the tests next to a real Claude Code, 2.1.88, 2.1.330 and 2.1.332 (installed from npm into .cache/)
	$(PY) -m pytest tests/interop

shapes: install  ## write each noun's pydantic-free shape from its model (protocols/shape_gen.py)
	$(PY) -m protocols.shape_gen

lint: install  ## ruff, mypy (with the pydantic plugin), then import-linter's contracts (pyproject.toml)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

bench: install bytecode postgresql ripgrep bubblewrap  ## the benchmarks of docs/protocols.md; each ends with a key=value line
	$(PY) bench/cli_startup.py --imports
	$(PY) bench/latency.py
	$(PY) bench/mcp_delivery.py
	$(PY) bench/throughput.py
	$(PY) bench/claims.py --sweep
	$(PY) bench/spawn.py
	$(PY) bench/idle_cpu.py
	$(PY) bench/idle_requests.py
	$(PY) bench/wake_to_request.py
	$(PY) bench/prompt_cache.py
	$(PY) bench/read_memory.py
	$(PY) bench/long_job.py --faults
	$(PY) bench/tools.py
	$(PY) bench/search.py
	$(PY) bench/dashboard.py
	$(PY) bench/interop_inbox.py
	$(PY) bench/subagents.py
	$(PY) bench/skills_catalogue.py
	$(PY) bench/pg_store.py
	$(PY) bench/pg_idle.py
	$(PY) bench/pg_retention.py
	$(PY) bench/sandbox.py
	$(PY) bench/web.py

screenshots: install  ## docs/images/watch*.png: swarm watch in a tmux pane, a scripted team
	$(PY) docs/screenshots.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis *.egg-info .cache
