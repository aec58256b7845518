"""Entry point of the teammate process: parse, choose a brain, run, report failures.

``--model shell`` runs the offline shell worker; ``--model scripted --script FILE`` the Claude
brain on a scripted model (no network); any other model name the Claude brain on the Messages
API. Exit codes: 0 after an approved shutdown or SIGTERM, 1 when it cannot run (not a member
of the team, already running, no API key, a bad agent definition or script), 2 for a bad
command line.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

from protocols.clock import now_iso
from protocols.errors import ProtocolsError
from protocols.mailbox import Mailbox
from protocols.messages import IdleNotification
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.printable import printable
from protocols.team import TeamFile
from teammate.agents import AgentDefinitionError, from_flag_json, load_agent
from teammate.brain import Brain
from teammate.claude_brain import ClaudeBrain
from teammate.instance import AlreadyRunning
from teammate.model import (
    ClaudeModel,
    Model,
    ModelError,
    ScriptedModel,
    has_api_key,
    resolve_model,
)
from teammate.options import TeammateOptions, UsageError, parse
from teammate.reporter import StatusReporter
from teammate.runtime import Teammate, TeammateError
from teammate.script import ScriptError, load_script
from teammate.settings import SettingsError, load_settings
from teammate.shell_brain import DEFAULT_ASK_RULES, ShellBrain
from teammate.transcript import Transcript


class CannotStart(Exception):
    """The teammate cannot run with this configuration; the message says what to change."""


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=os.environ.get("SWARM_LOG_LEVEL", "WARNING"), stream=sys.stderr)
    try:
        options = parse(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        print(f"swarm-teammate: {exc}", file=sys.stderr)
        return 2
    paths = TeamPaths.for_team(options.team_name)
    say = functools.partial(print, flush=True)
    model_name = (
        options.model if options.model in ("shell", "scripted") else resolve_model(options.model)
    )
    reporter = StatusReporter(paths, options.agent_name, model_name)
    try:
        brain = build_brain(options, paths, reporter, say)
    except CannotStart as exc:
        print(f"swarm-teammate: {exc}", file=sys.stderr)
        _report_failure(paths, options.agent_name, options.color, str(exc))
        reporter.set("failed", str(exc))
        return 1
    try:
        return Teammate(options, brain, paths, say=say, reporter=reporter).run()
    except AlreadyRunning as exc:  # the status file is the running teammate's: leave it
        print(f"swarm-teammate: {exc}", file=sys.stderr)
        return 1
    except (TeammateError, ProtocolsError, OSError) as exc:
        print(f"swarm-teammate: {printable(str(exc))}", file=sys.stderr)
        with contextlib.suppress(Exception):
            reporter.set("failed", f"could not start: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130


def build_brain(
    options: TeammateOptions,
    paths: TeamPaths,
    reporter: StatusReporter,
    say: Callable[[str], None],
) -> Brain:
    """The brain `options` ask for; `CannotStart` says what is missing."""
    cwd = Path.cwd()
    if options.model == "shell":
        return ShellBrain(
            cwd=cwd,
            ask_rules=options.ask or DEFAULT_ASK_RULES,
            permission_mode=options.permission_mode,
            timeout_s=options.task_timeout_s,
        )
    try:
        flag = from_flag_json(options.agents) if options.agents else None
        agent = load_agent(options.agent_type or "general-purpose", project_dir=cwd, flag=flag)
        settings = load_settings(Path(options.settings)) if options.settings else None
    except (AgentDefinitionError, SettingsError) as exc:
        raise CannotStart(str(exc)) from None
    # the command line wins, then the settings file, then the agent definition
    mode = options.permission_mode
    if not options.permission_mode_given:
        mode = (settings.default_mode if settings else None) or agent.permission_mode or mode
    brain = ClaudeBrain(
        model=_model(options),
        agent=agent,
        name=options.agent_name,
        paths=paths,
        cwd=cwd,
        permission_mode=mode,
        plan_mode_required=options.plan_mode_required,
        max_turns=options.max_turns,
        rules=settings.rules if settings else None,
        reporter=reporter,
        transcript=Transcript(paths.transcript(options.agent_name)),
        say=say,
    )
    # a teammate in its own worktree keeps its file tools inside it (unless a rule allows more)
    brain.policy.confined = _in_worktree(paths, options.agent_name)
    return brain


def _in_worktree(paths: TeamPaths, name: str) -> bool:
    try:
        member = TeamFile(paths).load().member(name)
    except ProtocolsError:
        return False
    return bool(member is not None and member.worktreePath)


def _model(options: TeammateOptions) -> Model:
    if options.model == "scripted":
        assert options.script is not None
        try:
            return ScriptedModel(load_script(Path(options.script)))
        except ScriptError as exc:
            raise CannotStart(str(exc)) from None
    if not has_api_key():
        raise CannotStart(
            f"model {options.model!r} needs an API key: set ANTHROPIC_API_KEY (or "
            "ANTHROPIC_AUTH_TOKEN; ANTHROPIC_BASE_URL for another endpoint), or use "
            "--model shell / --model scripted --script FILE to work offline"
        )
    try:
        return ClaudeModel(options.model)
    except ModelError as exc:
        raise CannotStart(str(exc)) from None


def _report_failure(paths: TeamPaths, name: str, color: str | None, reason: str) -> None:
    """Tell the lead this teammate could not start (if the team exists)."""
    note = IdleNotification(
        from_=name, timestamp=now_iso(), idleReason="failed", failureReason=reason
    )
    try:
        Mailbox(paths).send(LEAD_NAME, note, sender=name, color=color)
    except ProtocolsError as exc:
        print(f"swarm-teammate: could not tell the lead: {exc}", file=sys.stderr)
