"""Entry point of the teammate process: parse, choose a brain, run, report failures.

``--model shell`` runs the offline shell worker; ``--model scripted --script FILE`` the Claude
brain on a scripted model (no network); any other model name the Claude brain on the Messages
API. Exit codes: 0 after an approved shutdown or SIGTERM, 1 when it cannot run (not a member
of the team, already running, no API key, a bad agent definition or script), 2 for a bad
command line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import functools
import logging
import os
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from protocols.clock import now_iso
from protocols.collector import no_last_collection
from protocols.errors import Error, ProtocolsError
from protocols.member.budget import Limits
from protocols.member.catalogue import resolve
from protocols.member.prices import (
    PriceFileError,
    PriceTable,
    default_prices,
    load_prices,
    prices_path,
)
from protocols.messages.models import IdleNotification
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.printable import printable
from protocols.store.selection import locate, open_store
from protocols.values import MemberState, ModelKind, PermissionMode
from teammate.agent.transcript import Transcript
from teammate.api.model import (
    ClaudeModel,
    Model,
    ScriptedModel,
    has_api_key,
)
from teammate.api.model_settings import ModelSettings, SettingsValueError
from teammate.api.script import load_script
from teammate.brains.base import Brain
from teammate.brains.shell import ShellBrain, shell_policy
from teammate.budget import Budget
from teammate.config.definitions import AgentDefinition, from_flag_json, load_agent
from teammate.config.settings import Settings, layered_settings, load_settings
from teammate.hooks import settings_hooks
from teammate.instance import AlreadyRunning
from teammate.mcp.config import configured_servers
from teammate.options import MemberSpec, TeammateOptions, UsageError, parse
from teammate.permissions.policy import parse_rule, rule_or_command_pattern
from teammate.reporter import StatusReporter
from teammate.runtime import Teammate
from teammate.sandbox import SandboxUnavailable, sandbox_for
from teammate.sandbox.bwrap import Sandbox

if TYPE_CHECKING:
    from protocols.pg.member_log import Shipper

TASK_LIST_ID = "CLAUDE_CODE_TASK_LIST_ID"
SHIP_AFTER_SILENCE_S = 0.5  # its last log lines, once its store stopped answering a stop


class CannotStart(Error):
    """The teammate cannot run with this configuration; the message says what to change."""


def main(argv: list[str] | None = None) -> int:
    no_last_collection()
    logging.basicConfig(level=os.environ.get("SWARM_LOG_LEVEL", "WARNING"), stream=sys.stderr)
    # `kill -USR1 PID` prints where each of its threads is to its stderr (its pane or log): a
    # teammate that seems stuck says where, and goes on
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        options = parse(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        print(f"swarm-teammate: {exc}", file=sys.stderr)
        return 2
    try:  # a Claude Code lead names the task list its teammates share (2.1.178 and later)
        paths = locate(options.team_name, task_list=os.environ.get(TASK_LIST_ID))
    except ProtocolsError as exc:
        print(f"swarm-teammate: {printable(str(exc))}", file=sys.stderr)
        return 2
    try:
        shipper = open_store(paths).log_shipper(options.agent_name)
    except ProtocolsError as exc:
        print(f"swarm-teammate: {printable(str(exc))}", file=sys.stderr)
        return 2
    with shipper as ship, _shipping_warnings(ship):
        return _run(options, paths, ship)


def _run(options: TeammateOptions, paths: TeamPaths, ship: Shipper | None) -> int:
    """The teammate's life once its team's store is known; `ship` also gets what it prints and
    its transcript's records (a PostgreSQL team: `protocols.pg.member_log`)."""
    say = _say if ship is None else functools.partial(_say_and_ship, ship)

    def complain(text: str) -> None:
        print(f"swarm-teammate: {text}", file=sys.stderr)
        if ship is not None:
            ship.put({"ts": now_iso(), "kind": "log", "text": text})

    model = options.spec.model
    model_name = model if options.spec.kind.offline else resolve(model).id
    reporter = StatusReporter(paths, options.agent_name, model_name)
    try:
        brain = build_brain(options, paths, reporter, say, mirror=ship.put if ship else None)
    except Error as exc:  # a bad definition, settings file, script or model: said, not raised
        complain(printable(str(exc)))
        _report_failure(paths, options.agent_name, options.color, str(exc))
        reporter.set(MemberState.FAILED, str(exc))
        return 1
    try:
        teammate = Teammate(options, brain, paths, say=say, reporter=reporter)
        code = teammate.run()
        if ship is not None and teammate.store_silent:  # its lines would wait for it in vain
            ship.close(timeout=SHIP_AFTER_SILENCE_S)
        return code
    except AlreadyRunning as exc:  # the status file is the running teammate's: leave it
        complain(str(exc))
        with contextlib.suppress(Exception):
            brain.stop()  # its MCP servers, started meanwhile
        return 1
    except (Error, OSError) as exc:
        complain(printable(str(exc)))
        with contextlib.suppress(Exception):
            reporter.set(MemberState.FAILED, f"could not start: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130


def _say(text: str) -> None:
    print(text, flush=True)


def _say_and_ship(ship: Shipper, text: str) -> None:
    print(text, flush=True)
    ship.put({"ts": now_iso(), "kind": "output", "text": text})


@contextlib.contextmanager
def _shipping_warnings(ship: Shipper | None) -> Iterator[None]:
    """While inside, the process's warnings also go to `ship` (if any)."""
    if ship is None:
        yield
        return
    from protocols.pg.member_log import ShippingHandler

    handler = ShippingHandler(ship, now_iso)
    logging.getLogger().addHandler(handler)
    try:
        yield
    finally:
        logging.getLogger().removeHandler(handler)


def build_brain(
    options: TeammateOptions,
    paths: TeamPaths,
    reporter: StatusReporter,
    say: Callable[[str], None],
    mirror: Callable[[dict[str, Any]], None] | None = None,
) -> Brain:
    """The brain `options` ask for; an `Error` (`CannotStart`, a bad definition, settings file or
    script) says what is missing. `mirror` gets the transcript's records too."""
    cwd = Path.cwd()
    spec = options.spec
    flag = Path(spec.settings) if spec.settings else None
    # the user's, the project's and the local settings files, then --settings (--restricted:
    # only --settings)
    if spec.restricted:
        settings = load_settings(flag) if flag is not None else Settings()
    else:
        settings = layered_settings(cwd, paths.root, flag)
    rules = settings.rules
    settings_mode = settings.default_mode
    transcript = paths.transcript(options.agent_name)
    hooks = settings_hooks(
        settings, cwd, session_id=str(uuid.uuid4()), transcript_path=str(transcript)
    )
    hidden = (paths.lead_key.parent.parent,)  # the lead's keys: never readable in the sandbox
    if spec.kind == ModelKind.SHELL:
        mode = spec.permission_mode or settings_mode or PermissionMode.DEFAULT
        sandbox = hooks.sandbox = _sandbox(settings, cwd, hidden, say, mode)
        policy = shell_policy(mode, cwd, spec.ask, rules)
        return ShellBrain(
            cwd=cwd, policy=policy, timeout_s=spec.task_timeout_s, hooks=hooks, sandbox=sandbox
        )
    # the Claude brain's modules (its agent loop, tools and MCP client: ~75 ms of a start) load
    # only here: a shell teammate never needs them
    from teammate.agent.fork import fork_enabled
    from teammate.brains.claude import ClaudeBrain, turns_from
    from teammate.mcp.client import McpManager

    reporter.attach_budget(_budget(options, paths))
    if spec.ask:  # --ask rules apply to a Claude teammate's tool calls too
        rules = {**rules, "ask": [*map(rule_or_command_pattern, spec.ask), *rules.get("ask", [])]}
    # its file tools never read or write the lead's signing keys (protocols.team.keyfile)
    keys = f"/{paths.lead_key.parent.parent}/**"
    denied = [parse_rule(f"Read({keys})"), parse_rule(f"Edit({keys})")]
    rules = {**rules, "deny": [*denied, *rules.get("deny", [])]}
    agents_flag = from_flag_json(spec.agents) if spec.agents else None
    from_settings = settings.agents if settings else None

    def definition(kind: str) -> AgentDefinition:
        return load_agent(kind, project_dir=cwd, flag=agents_flag, settings=from_settings)

    agent = with_flags(definition(spec.agent_type or "general-purpose"), spec)
    servers = configured_servers(
        cwd,
        settings.mcp_servers,
        settings.origins,
        spec.mcp_config,
    )
    # cheap until a server starts: a teammate without servers never imports the SDK. The ones
    # its first request waits for start now, before the model client (the anthropic import,
    # ~1 s), so their start overlaps the teammate's; the others once it is built, so they take
    # no CPU from its way to that request
    # the command line wins, then the settings file, then the agent definition
    mode = spec.permission_mode or settings_mode or agent.permission_mode or PermissionMode.DEFAULT
    sandbox = hooks.sandbox = _sandbox(settings, cwd, hidden, say, mode)
    mcp = McpManager(cwd, sandbox)  # its stdio servers in its sandbox too
    mcp.start([servers[n] for n in agent.required_mcp_servers if n in servers])
    model = _model(options)
    window = settings.auto_compact_window
    try:  # the window, effort and limits its requests use; a bad variable is said now
        environ = {**settings.env, **os.environ}  # the environment wins over settings' env
        requests = ModelSettings.of(model.name, agent.effort, environ, window)
        max_turns = spec.max_turns or agent.max_turns or turns_from(environ)
    except SettingsValueError as exc:
        raise CannotStart(str(exc)) from None
    brain = ClaudeBrain(
        model=model,
        agent=agent,
        name=options.agent_name,
        paths=paths,
        cwd=cwd,
        permission_mode=mode,
        plan_mode_required=spec.plan_mode_required,
        max_turns=max_turns,
        rules=rules,
        reporter=reporter,
        transcript=Transcript(transcript, mirror),
        say=say,
        agents=definition,
        fork=fork_enabled(os.environ, settings.env if settings else None),
        resume=spec.resume,
        # its agent type's front-matter hooks apply to it (its Stop hooks stay Stop hooks)
        hooks=hooks.scoped(agent.hooks, f"agent {agent.name} ({agent.source})", "Stop"),
        mcp=mcp,
        mcp_servers=servers,
        tell_lead=functools.partial(_tell_lead, paths, options.agent_name, options.color),
        settings=requests,
    )
    # a teammate in its own worktree keeps its file tools inside it (unless a rule allows more);
    # so does a restricted one, in its working directory
    brain.policy.confined = spec.restricted or _in_worktree(paths, options.agent_name)
    brain.shells.sandbox = sandbox  # its sub-agents' commands too: they share its shells
    return brain


def with_flags(agent: AgentDefinition, spec: MemberSpec) -> AgentDefinition:
    """The teammate's agent definition as its command line changes it: ``--effort`` over the
    definition's, ``--restricted`` without the tools that run commands."""
    if spec.effort is not None:
        agent = dataclasses.replace(agent, effort=spec.effort)
    if spec.restricted:
        agent = dataclasses.replace(agent, disallowed_tools=(*agent.disallowed_tools, "Bash"))
    return agent


def _budget(options: TeammateOptions, paths: TeamPaths) -> Budget:
    """A Claude teammate's budget (every one has one: `swarm budget` may set limits later); a
    cost limit needs a price for its model (`CannotStart` otherwise)."""
    spec = options.spec
    try:
        prices = load_prices(paths.root)
    except PriceFileError as exc:
        if spec.max_cost is not None:
            raise CannotStart(f"--max-cost needs the price table: {exc}") from None
        prices = PriceTable(default_prices(), {})  # said by `swarm status`; no limit needs it
    if spec.max_cost is not None and prices.price_of(spec.model) is None:
        raise CannotStart(
            f"--max-cost: model {spec.model!r} has no price, so its cost cannot be counted; "
            f"price it in {prices_path(paths.root)} or use --max-tokens"
        )
    limits = Limits(maxCostUsd=spec.max_cost, maxTokens=spec.max_tokens, maxSeconds=spec.max_time)
    return Budget(options.agent_name, limits, prices, paths)


def _sandbox(
    settings: Settings,
    cwd: Path,
    hidden: tuple[Path, ...],
    say: Callable[[str], None],
    mode: str,
) -> Sandbox | None:
    """Its commands', and its hooks', OS sandbox: as its settings say, else by its permission
    mode (`teammate.sandbox.sandbox_for`); `CannotStart` when one is required and none can be
    made."""
    try:
        return sandbox_for(settings.sandbox, cwd, hidden, say, mode)
    except SandboxUnavailable as exc:
        raise CannotStart(str(exc)) from None


def _tell_lead(paths: TeamPaths, name: str, color: str | None, text: str) -> None:
    """A plain message to the lead (an MCP server failed); never fails the caller."""
    try:
        open_store(paths).mailbox().send(
            LEAD_NAME, text, sender=name, summary="MCP server failed", color=color
        )
    except ProtocolsError as exc:
        print(f"swarm-teammate: could not tell the lead: {exc}", file=sys.stderr)


def _in_worktree(paths: TeamPaths, name: str) -> bool:
    try:
        member = open_store(paths).team_file().load().member(name)
    except ProtocolsError:
        return False
    return bool(member is not None and member.worktreePath)


def _model(options: TeammateOptions) -> Model:
    spec = options.spec
    if spec.kind == ModelKind.SCRIPTED:
        assert spec.script is not None
        return ScriptedModel(load_script(Path(spec.script)))
    if not has_api_key():
        raise CannotStart(
            f"model {spec.model!r} needs an API key: set ANTHROPIC_API_KEY (or "
            "ANTHROPIC_AUTH_TOKEN; ANTHROPIC_BASE_URL for another endpoint), or use "
            "--model shell / --model scripted --script FILE to work offline"
        )
    return ClaudeModel(spec.model)


def _report_failure(paths: TeamPaths, name: str, color: str | None, reason: str) -> None:
    """Tell the lead this teammate could not start (if the team exists)."""
    note = IdleNotification(
        from_=name, timestamp=now_iso(), idleReason="failed", failureReason=reason
    )
    try:
        open_store(paths).mailbox().send(LEAD_NAME, note, sender=name, color=color)
    except ProtocolsError as exc:
        print(f"swarm-teammate: could not tell the lead: {exc}", file=sys.stderr)
