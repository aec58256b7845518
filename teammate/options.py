"""The teammate command line both ways: `MemberSpec` (how a member starts), `command_line`
(spec to argv) and `parse` (argv to `TeammateOptions`: identity and spec).

A Claude Code lead starts a teammate as ``<binary> --agent-id alice@t --agent-name alice
--team-name t --agent-color blue --parent-session-id <uuid> [--lead-verify-key <ms>.<key>]
[--plan-mode-required] [--agent-type T] [--dangerously-skip-permissions | --permission-mode M]
[--effort E] [--settings P] [--mcp-config FILE] [--restricted] [--plugin-dir D]...
[--teammate-mode M] [--chrome|--no-chrome] --model M`` (2.1.88's flags and 2.1.330's; 2.1.332
passes the same, with more environment that swarm does not read). `parse` accepts exactly that,
ignores flags it has no use for (also unknown ones, such as ``--proactivity``, ``--tools`` or
``--setting-sources=...``, so newer Claude Code versions still work), and adds swarm's own
options (``--ask``, ``--task-timeout``).

``--lead-verify-key`` is not part of the spec: a new key time is handed out at each start (as
Claude Code does), so it is an argument of `command_line` and a field of `TeammateOptions`.
``--effort`` sets a Claude teammate's extended thinking (an unknown level is ignored with a
warning, as Claude Code does); ``--restricted`` takes away the tools that run commands, keeps
the file tools inside the working directory and reads no user, project or local settings file
(only ``--settings``).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from protocols.errors import Error
from protocols.member.catalogue import model_name_problem
from protocols.names import checked_component
from protocols.team.signing import parse_verify_key
from protocols.values import ModelKind, PermissionMode
from teammate.permissions.policy import rule_or_command_pattern

log = logging.getLogger(__name__)

DEFAULT_TASK_TIMEOUT_S = 600.0
DEFAULT_PERMISSION_TIMEOUT_S = 900.0
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")  # Claude Code 2.1.330's --effort


class UsageError(Error):
    """A command line the teammate cannot run with; the message says what is wrong."""


@dataclass(frozen=True)
class MemberSpec:
    """How a member starts: one frozen value for the ``swarm spawn`` command, `spawn_member`,
    ``swarm up``'s plan, the lead's Agent tool and the teammate's own command line.

    The first group is the teammate process's options: `argv` writes them as teammate flags and
    `parse` reads them back into an equal spec, so a teammate can be restarted with exactly the
    options it had. The second group says where swarm starts the process (backend, directory,
    worktree, another program); it is recorded in the member entry (`to_value`), not passed to
    the process. ``permission_mode`` None means "not given": the settings file, then the agent
    definition, decide; then ``default``.
    """

    model: str = "shell"
    agent_type: str | None = None
    permission_mode: PermissionMode | None = None
    plan_mode_required: bool = False
    script: str | None = None  # a YAML list of model turns for --model scripted
    max_turns: int | None = None
    settings: str | None = None  # a Claude Code settings JSON: permission rules, defaultMode
    agents: str | None = None  # Claude Code's --agents JSON: definitions over all others
    mcp_config: str | None = None  # a .mcp.json-shaped file: MCP servers over all others
    effort: str | None = None  # --effort: a Claude teammate's extended thinking
    restricted: bool = False  # --restricted: no command tools, file tools confined, no settings
    ask: tuple[str, ...] = ()  # rules (a bare pattern is a Bash rule) that need the lead's yes
    task_timeout_s: float = DEFAULT_TASK_TIMEOUT_S
    permission_timeout_s: float = DEFAULT_PERMISSION_TIMEOUT_S
    resume: bool = False  # carry on with the conversation of the member's last instance
    max_cost: float | None = None  # --max-cost: USD this process may spend (`teammate.budget`)
    max_tokens: int | None = None  # --max-tokens: tokens it may use
    max_time: float | None = None  # --max-time: seconds it may run (wall-clock)
    # where swarm starts it
    backend: str = "auto"
    cwd: str | None = None
    worktree: str | None = None  # a git worktree slug
    teammate_command: str | None = None  # another program with Claude Code's command line

    @property
    def kind(self) -> ModelKind:
        return ModelKind.of(self.model)

    def swarm_only(self) -> list[str]:
        """The flags given that only swarm's own teammate understands (a foreign program, such
        as ``claude``, gets Claude Code's teammate command line only)."""
        given = {
            "--script": self.script is not None,
            "--max-turns": self.max_turns is not None,
            "--ask": bool(self.ask),
            "--task-timeout": self.task_timeout_s != DEFAULT_TASK_TIMEOUT_S,
            "--permission-timeout": self.permission_timeout_s != DEFAULT_PERMISSION_TIMEOUT_S,
            "--resume": self.resume,
            "--max-cost": self.max_cost is not None,
            "--max-tokens": self.max_tokens is not None,
            "--max-time": self.max_time is not None,
        }
        return [flag for flag, present in given.items() if present]

    def argv(self) -> list[str]:
        """The teammate flags for this spec (after the identity flags), ending in ``--model``
        as Claude Code's command line does; swarm's own flags only when they are given."""
        argv: list[str] = []
        if self.plan_mode_required:
            argv.append("--plan-mode-required")
        if self.agent_type:
            argv += ["--agent-type", self.agent_type]
        if self.permission_mode is not None:
            argv += ["--permission-mode", str(self.permission_mode)]
        if self.effort is not None:
            argv += ["--effort", self.effort]
        if self.settings is not None:
            argv += ["--settings", self.settings]
        if self.agents is not None:
            argv += ["--agents", self.agents]
        if self.mcp_config is not None:
            argv += ["--mcp-config", self.mcp_config]
        if self.restricted:
            argv.append("--restricted")
        if self.script is not None:
            argv += ["--script", self.script]
        if self.max_turns is not None:
            argv += ["--max-turns", str(self.max_turns)]
        argv += [f"--ask={rule}" for rule in self.ask]  # one word: a rule may start with "-"
        if self.task_timeout_s != DEFAULT_TASK_TIMEOUT_S:
            argv += ["--task-timeout", repr(self.task_timeout_s)]
        if self.permission_timeout_s != DEFAULT_PERMISSION_TIMEOUT_S:
            argv += ["--permission-timeout", repr(self.permission_timeout_s)]
        if self.resume:
            argv.append("--resume")
        if self.max_cost is not None:
            argv += ["--max-cost", repr(self.max_cost)]
        if self.max_tokens is not None:
            argv += ["--max-tokens", str(self.max_tokens)]
        if self.max_time is not None:
            argv += ["--max-time", repr(self.max_time)]
        return [*argv, "--model", self.model]

    def process_part(self) -> MemberSpec:
        """This spec without where swarm starts it: what `argv` carries."""
        return dataclasses.replace(
            self, backend="auto", cwd=None, worktree=None, teammate_command=None
        )

    def to_value(self) -> dict[str, Any]:
        """The spec as JSON (the keys that differ from the defaults), for the member entry."""
        value: dict[str, Any] = {}
        for spec_field in dataclasses.fields(self):
            current = getattr(self, spec_field.name)
            if current != spec_field.default:
                value[spec_field.name] = list(current) if isinstance(current, tuple) else current
        return value

    @classmethod
    def from_value(cls, value: Any) -> MemberSpec | None:
        """A spec from `to_value`'s JSON; None when `value` is not one (an old or foreign entry)."""
        if not isinstance(value, dict):
            return None
        known = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in value.items() if k in known}
        if "ask" in fields:  # a list of rule texts, nothing else (the entry is a file anyone edits)
            ask = fields["ask"]
            if not isinstance(ask, list) or not all(isinstance(rule, str) for rule in ask):
                return None
            fields["ask"] = tuple(ask)
        try:
            if fields.get("permission_mode") is not None:
                fields["permission_mode"] = PermissionMode(fields["permission_mode"])
            return cls(**fields)
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True)
class TeammateOptions:
    """A parsed teammate command line: who the teammate is, and its `MemberSpec`."""

    agent_name: str
    team_name: str
    agent_id: str
    spec: MemberSpec = field(default_factory=MemberSpec)
    color: str | None = None
    parent_session_id: str | None = None
    lead_verify_key: str | None = None  # check the lead's signatures (protocols.team.signing)
    ignored: tuple[str, ...] = field(default=())


def command_line(
    program: Sequence[str],
    spec: MemberSpec,
    *,
    name: str,
    team: str,
    color: str | None = None,
    parent_session_id: str | None = None,
    lead_verify_key: str | None = None,
) -> list[str]:
    """The teammate command line, exactly as Claude Code starts one (spec sections 7 and 9),
    with swarm's own flags when `spec` gives them. `program` is swarm's teammate, or another
    program that takes Claude Code's teammate command line (``claude`` itself)."""
    argv = [
        *program,
        "--agent-id",
        f"{name}@{team}",
        "--agent-name",
        name,
        "--team-name",
        team,
        "--agent-color",
        color or "blue",
    ]
    if parent_session_id:
        argv += ["--parent-session-id", parent_session_id]
    if lead_verify_key:
        argv += ["--lead-verify-key", lead_verify_key]
    return [*argv, *spec.argv()]


def check_limits(
    max_cost: float | None, max_tokens: int | None, model: str, max_time: float | None = None
) -> None:
    """Raise `UsageError` for a budget that cannot be kept: not positive, or for the shell
    worker (it makes no model calls). Whether the model has a price is checked where the price
    table is read (the teammate's start, `swarm spawn`)."""
    if max_cost is not None and not (math.isfinite(max_cost) and max_cost > 0):
        raise UsageError(f"--max-cost must be a positive number of USD, got {max_cost}")
    if max_tokens is not None and max_tokens <= 0:
        raise UsageError(f"--max-tokens must be a positive number of tokens, got {max_tokens}")
    if max_time is not None and not (math.isfinite(max_time) and max_time > 0):
        raise UsageError(f"--max-time must be a positive number of seconds, got {max_time}")
    limited = any(v is not None for v in (max_cost, max_tokens, max_time))
    if limited and ModelKind.of(model) == ModelKind.SHELL:
        raise UsageError(
            "--max-cost, --max-tokens and --max-time are for Claude teammates: a shell worker "
            "makes no model calls"
        )


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
    parser.add_argument(
        "--lead-verify-key",
        metavar="MS.KEY",
        help="the team lead's public key (<ms>.<base64url Ed25519 SubjectPublicKeyInfo>): only "
        "messages it signed count as the lead's; others are shown as unverified, and their "
        "shutdown requests, permission answers and plan approvals are not obeyed",
    )
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
        help="a YAML list of model turns for --model scripted (see teammate/api/script.py)",
    )
    parser.add_argument(
        "--max-turns",
        type=int,
        default=None,
        help="model calls allowed per piece of work (default: the agent definition's maxTurns, "
        "else CLAUDE_CODE_MAX_TURNS, else no cap: --max-cost and --max-tokens are the guard)",
    )
    parser.add_argument(
        "--permission-timeout",
        type=float,
        default=DEFAULT_PERMISSION_TIMEOUT_S,
        help="seconds to wait for the lead to answer a permission or plan request before "
        "treating it as denied (default: %(default)s)",
    )
    parser.add_argument("--permission-mode", choices=PermissionMode.names(), default=None)
    parser.add_argument(
        "--dangerously-skip-permissions",
        action="store_true",
        help="same as --permission-mode bypassPermissions",
    )
    parser.add_argument(
        "--effort",
        metavar="LEVEL",
        help=f"a Claude teammate's extended thinking: {', '.join(EFFORT_LEVELS)} (over its agent "
        "definition's effort; an unknown level is ignored with a warning)",
    )
    parser.add_argument(
        "--restricted",
        action="store_true",
        help="no Bash for a Claude teammate, its file tools kept inside the working directory, "
        "and no user, project or local settings files (--settings still applies)",
    )
    parser.add_argument(
        "--ask",
        action="append",
        default=None,
        metavar="PATTERN",
        help="a permission rule that needs the lead's approval (repeatable; replaces the "
        "shell worker's defaults): a Bash command pattern such as 'rm -r*' or 'git push:*', "
        "or a rule such as 'Bash(make deploy)'",
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
        "--mcp-config",
        metavar="FILE",
        help='MCP servers ({"mcpServers": {...}}, as .mcp.json) over those of .mcp.json and '
        "the settings files",
    )
    parser.add_argument(
        "--agents",
        metavar="JSON",
        help="agent definitions as JSON, {name: {description, prompt, tools, model, ...}}, "
        "over the built-in, user and project ones (Claude Code's flag)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="carry on with the conversation this member's last instance had (its transcript), "
        "instead of starting cold; Claude teammates only",
    )
    parser.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="a Claude teammate's budget: the USD its model calls (its sub-agents' included, "
        "priced as swarm-prices.json or the built-in table says) may cost; at 80%% the lead is "
        "told, at 100%% it stops making model requests until `swarm budget` raises it",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="a Claude teammate's budget in tokens (input, output and cache tokens, its "
        "sub-agents' included); as --max-cost",
    )
    parser.add_argument(
        "--max-time",
        type=float,
        metavar="SECONDS",
        help="a Claude teammate's time limit: the seconds it may run from its start; as "
        "--max-cost (`swarm budget NAME --time +30m` raises it)",
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
    mode = args.permission_mode
    if args.dangerously_skip_permissions:
        mode = PermissionMode.BYPASS
    if args.task_timeout <= 0:
        raise UsageError(f"--task-timeout must be positive, got {args.task_timeout}")
    if args.permission_timeout <= 0:
        raise UsageError(f"--permission-timeout must be positive, got {args.permission_timeout}")
    problem = model_name_problem(args.model)
    if problem is not None:
        raise UsageError(problem)
    if args.max_turns is not None and args.max_turns < 1:
        raise UsageError(f"--max-turns must be at least 1, got {args.max_turns}")
    if args.resume and ModelKind.of(args.model) == ModelKind.SHELL:
        raise UsageError("--resume is for Claude teammates: a shell worker has no conversation")
    if args.restricted and ModelKind.of(args.model) == ModelKind.SHELL:
        raise UsageError(
            "--restricted takes away the tools that run commands, and running commands is all "
            "the shell worker does: use a Claude model"
        )
    effort = args.effort
    if effort is not None and effort not in EFFORT_LEVELS:
        log.warning(
            "unknown --effort value %r: ignoring it (valid values: %s)",
            effort,
            ", ".join(EFFORT_LEVELS),
        )
        effort = None
    if args.lead_verify_key is not None:
        try:
            parse_verify_key(args.lead_verify_key)
        except ValueError as exc:
            raise UsageError(f"--lead-verify-key: {exc}") from None
    check_limits(args.max_cost, args.max_tokens, args.model, args.max_time)
    if (args.model == ModelKind.SCRIPTED) != (args.script is not None):
        raise UsageError("--model scripted and --script FILE go together")
    for text in args.ask or ():
        try:
            rule_or_command_pattern(text)
        except ValueError as exc:
            raise UsageError(f"--ask {text!r}: {exc}") from None
    spec = MemberSpec(
        model=args.model,
        agent_type=args.agent_type,
        permission_mode=PermissionMode(mode) if mode is not None else None,
        plan_mode_required=args.plan_mode_required,
        script=args.script,
        max_turns=args.max_turns,
        settings=args.settings,
        agents=args.agents,
        mcp_config=args.mcp_config,
        effort=effort,
        restricted=args.restricted,
        ask=tuple(args.ask) if args.ask is not None else (),
        task_timeout_s=args.task_timeout,
        permission_timeout_s=args.permission_timeout,
        resume=args.resume,
        max_cost=args.max_cost,
        max_tokens=args.max_tokens,
        max_time=args.max_time,
    )
    return TeammateOptions(
        agent_name=args.agent_name,
        team_name=args.team_name,
        agent_id=args.agent_id,
        spec=spec,
        color=args.agent_color,
        parent_session_id=args.parent_session_id,
        lead_verify_key=args.lead_verify_key,
        ignored=tuple(unknown),
    )
