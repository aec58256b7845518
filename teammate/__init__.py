"""teammate: one agent process (`python -m teammate`, or the `swarm-teammate` script).

Modules: `options` (Claude Code's teammate command line), `runtime` (the WORK -> IDLE -> SHUTDOWN
loop over the inbox and the task board), `brain` (the interface to whatever does the thinking),
`shell_brain` (the offline brain that runs task commands), `instance` (one process per name),
`cli` (the entry point).
It imports `protocols` only, never `swarm`.
"""
