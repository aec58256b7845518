"""The reusable agent kit every Claude agent is built from: the agent loop over a `Model`, the
models themselves, scripted turns, the transcript, agent definitions, settings files and git
worktrees."""
