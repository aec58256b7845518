"""swarm: the orchestrator and the `swarm` command line.

Modules: `cli` (the click group and its one error funnel), `commands/` (the subcommands, one
module per area), `members` (liveness, stopping, reaping), `requests` (requests waiting for the
lead, and answering them), `errors`. Imports go one way: protocols <- teammate <- swarm.
"""
