"""The teammate command line: Claude Code's teammate flags (spec section 7), parsed.

A Claude Code lead starts a teammate as ``<binary> --agent-id alice@t --agent-name alice
--team-name t --agent-color blue --parent-session-id <uuid> [--plan-mode-required]
[--agent-type T] [--dangerously-skip-permissions | --permission-mode M] [--settings P]
[--plugin-dir D]... [--teammate-mode M] [--chrome|--no-chrome] --model M``. `parse` accepts
exactly that, ignores flags it has no use for (also unknown ones, so newer Claude Code versions
still work), and adds swarm's own options (``--ask``, ``--task-timeout``).
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass, field

from protocols.names import checked_component

log = logging.getLogger(__name__)

PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
DEFAULT_TASK_TIMEOUT_S = 600.0
DEFAULT_PERMISSION_TIMEOUT_S = 900.0


class UsageError(Exception):
    """A command line the teammate cannot run with; the message says what is wrong."""


@dataclass(frozen=True)
class TeammateOptions:
    agent_name: str
    team_name: str
    agent_id: str
    model: str = "shell"
    color: str | None = None
    agent_type: str | None = None
    parent_session_id: str | None = None
    plan_mode_required: bool = False
    permission_mode: str = "default"
    ask: tuple[str, ...] = ()
    task_timeout_s: float = DEFAULT_TASK_TIMEOUT_S
    permission_timeout_s: float = DEFAULT_PERMISSION_TIMEOUT_S
    max_turns: int | None = None
    script: str | None = None
    settings: str | None = None
    agents: str | None = None  # Claude Code's --agents JSON: definitions over all others
    permission_mode_given: bool = False
    ignored: tuple[str, ...] = field(default=())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="swarm-teammate",
        description=(
            "One swarm teammate process. It reads its prompt from its inbox "
            "(teams/<team>/inboxes/<name>.json under $CLAUDE_CONFIG_DIR), works the team's task "
            "board, and answers the shutdown protocol. Accepts Claude Code's teammate flags, so "
            "a Claude Code lead can start it through CLAUDE_CODE_TEAMMATE_COMMAND."
        ),
        epilog="Example: swarm-teammate --agent-id alice@demo --agent-name alice "
        "--team-name demo --model shell",
    )
    parser.add_argument("--agent-id", required=True, help="<name>@<team>")
    parser.add_argument("--agent-name", required=True)
    parser.add_argument("--team-name", required=True)
    parser.add_argument("--agent-color")
    parser.add_argument("--parent-session-id")
    parser.add_argument("--plan-mode-required", action="store_true")
    parser.add_argument("--agent-type")
    parser.add_argument(
        "--model",
        default="shell",
        help="'shell' for the offline shell worker; 'sonnet', 'opus', 'haiku' or a full model id "
        "for a Claude agent (needs ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL is honoured); "
        "'scripted' to play --script offline",
    )
    parser.add_argument(
        "--script",
        metavar="FILE",
        help="a YAML list of model turns for --model scripted (see teammate/script.py)",
    )
    parser.add_argument(
        "--max-turns",
        type=int,
        default=None,
        help="model calls allowed per piece of work (default: the agent definition's maxTurns, "
        "else 100)",
    )
    parser.add_argument(
        "--permission-timeout",
        type=float,
        default=DEFAULT_PERMISSION_TIMEOUT_S,
        help="seconds to wait for the lead to answer a permission or plan request before "
        "treating it as denied (default: %(default)s)",
    )
    parser.add_argument("--permission-mode", choices=PERMISSION_MODES, default=None)
    parser.add_argument(
        "--dangerously-skip-permissions",
        action="store_true",
        help="same as --permission-mode bypassPermissions",
    )
    parser.add_argument(
        "--ask",
        action="append",
        default=None,
        metavar="PATTERN",
        help="a command pattern that needs the lead's approval (repeatable; replaces the "
        "defaults; fnmatch syntax, e.g. 'rm -r*')",
    )
    parser.add_argument(
        "--task-timeout",
        type=float,
        default=DEFAULT_TASK_TIMEOUT_S,
        help="seconds a task's command may run (default: %(default)s)",
    )
    parser.add_argument(
        "--settings",
        metavar="FILE",
        help="Claude Code settings JSON; its permissions (allow/deny/ask rules, defaultMode) apply",
    )
    parser.add_argument(
        "--agents",
        metavar="JSON",
        help="agent definitions as JSON, {name: {description, prompt, tools, model, ...}}, "
        "over the built-in, user and project ones (Claude Code's flag)",
    )
    # accepted for Claude Code compatibility, not used by swarm teammates
    parser.add_argument("--plugin-dir", action="append")
    parser.add_argument("--teammate-mode")
    parser.add_argument("--chrome", action="store_true")
    parser.add_argument("--no-chrome", action="store_true")
    return parser


def parse(argv: list[str]) -> TeammateOptions:
    """Parse a teammate command line; raises `UsageError` (or exits for --help)."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        log.info("ignoring flags a swarm teammate has no use for: %s", " ".join(unknown))
    try:
        checked_component(args.agent_name, "agent name")
        checked_component(args.team_name, "team name")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    expected = f"{args.agent_name}@{args.team_name}"
    if args.agent_id != expected:
        raise UsageError(
            f"--agent-id {args.agent_id!r} does not match --agent-name and --team-name "
            f"(expected {expected!r})"
        )
    mode = args.permission_mode or "default"
    if args.dangerously_skip_permissions:
        mode = "bypassPermissions"
    if args.task_timeout <= 0:
        raise UsageError(f"--task-timeout must be positive, got {args.task_timeout}")
    if args.permission_timeout <= 0:
        raise UsageError(f"--permission-timeout must be positive, got {args.permission_timeout}")
    if args.max_turns is not None and args.max_turns < 1:
        raise UsageError(f"--max-turns must be at least 1, got {args.max_turns}")
    if (args.model == "scripted") != (args.script is not None):
        raise UsageError("--model scripted and --script FILE go together")
    return TeammateOptions(
        agent_name=args.agent_name,
        team_name=args.team_name,
        agent_id=args.agent_id,
        model=args.model,
        color=args.agent_color,
        agent_type=args.agent_type,
        parent_session_id=args.parent_session_id,
        plan_mode_required=args.plan_mode_required,
        permission_mode=mode,
        ask=tuple(args.ask) if args.ask is not None else (),
        task_timeout_s=args.task_timeout,
        permission_timeout_s=args.permission_timeout,
        max_turns=args.max_turns,
        script=args.script,
        settings=args.settings,
        agents=args.agents,
        permission_mode_given=args.permission_mode is not None or args.dangerously_skip_permissions,
        ignored=tuple(unknown),
    )
