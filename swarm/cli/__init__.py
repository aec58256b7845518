"""The `swarm` command: the group and its error funnel (`main`), helpers shared by the commands
(`common`), and one module per area of commands. Each command parses, calls the library, prints."""
