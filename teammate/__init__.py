"""teammate: one agent process (`python -m teammate`, or the `swarm-teammate` script).

Modules: `options` (Claude Code's teammate command line), `runtime` (the WORK -> IDLE -> SHUTDOWN
loop over the inbox and the task board), `brain` (the interface to whatever does the thinking),
`shell_brain` (the offline brain that runs task commands), `claude_brain` and `agent_loop` (the
Claude brain), `model` and `script` (Claude and scripted models), `tools/`, `policy` (permission
modes and rules), `agents` (agent definitions), `settings`, `lead_requests` (asking the lead),
`reporter` and `transcript` (what others can see), `budget` (spend against limits, the gate
before each model call), `instance` (one process per name), `cli` (the entry point).
It imports `protocols` only, never `swarm`.
"""
