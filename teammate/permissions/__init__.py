"""Claude Code's permission model: modes and allow/deny/ask rules (`policy`), splitting a shell
command into simple commands (`command_split`), and matching paths (`path_rules`)."""
