"""Claude Code's on-disk formats a teammate reads: settings files, agent definitions and skills
(each checked when it loads, with an error naming the file)."""
