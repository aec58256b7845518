"""The `swarm` subcommands, one module per area; `swarm.cli` puts them together."""
