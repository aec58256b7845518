"""What a member's status file (`protocols.member.status`) and its readers share without its models:
the usage keys every usage counts, and how a member's sub-agent is labelled where people read it."""

from __future__ import annotations

USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
LABEL_MARK = "\u203a"  # between a member's name and its sub-agent's in labels


def zero_usage() -> dict[str, int]:
    return dict.fromkeys(USAGE_KEYS, 0)


def subagent_label(member: str, label: str) -> str:
    """How a member's sub-agent is called where people read it: ``alice \u203a reviewer``."""
    return f"{member} {LABEL_MARK} {label}"
