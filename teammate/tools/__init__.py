"""The tools a Claude teammate can call, with Claude Code's names and input fields."""
