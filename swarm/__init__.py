"""swarm: the orchestrator and the `swarm` command line.

Modules: `cli` (the click group and its one error funnel), `commands/` (the subcommands, one
module per area), `members` (liveness, stopping, reaping), `requests` (requests waiting for the
lead, and answering them), `lifecycle` (spawn, shutdown, delete), `backends/` (tmux and
subprocess), `leader` (the lead's inbox as events), `console` and `lead_agent` and `lead_tools`
(`swarm lead`), `teamfile` and `up` (`swarm up`/`down`), `errors`.
Imports go one way: protocols <- teammate <- swarm.
"""

# the version `swarm --version` prints without reading the package metadata (importlib.metadata
# costs ~30 ms); pyproject.toml's, as tests/unit/test_cli_quick.py checks
__version__ = "0.1.0"
