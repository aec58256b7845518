"""Starting and stopping members: spawn (add the member, leave the prompt in its inbox, start the
process with a backend) and the shutdown protocol seen from the lead.

Nothing half-done is left behind: a spawn whose process cannot be started removes the member
again; a shutdown that ends with the process gone always removes the member and returns its
unfinished tasks to ``pending``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from protocols.clock import now_ms
from protocols.errors import ProtocolsError, UnknownMember
from protocols.fs import safefs
from protocols.member.catalogue import model_name_problem
from protocols.messages.models import ShutdownApproved, ShutdownRejected
from protocols.names import LEAD_NAME, validate_name
from protocols.paths import TeamPaths
from protocols.pids import ProcessIdentity, new_token
from protocols.store.selection import STORE_ENV, open_store, redacted
from protocols.team.model import Member
from protocols.values import MemberState, ModelKind, TaskStatus
from swarm.backends import SpawnBackend, Spawned, SpawnError, SpawnRequest, choose_backend
from swarm.backends.base import wait_until
from swarm.errors import SwarmError
from swarm.team.actions import send_shutdown_request
from swarm.team.approvals import close_requests
from swarm.team.budget import check_priced
from swarm.team.isolation import isolation_of, member_fields, prepare, release
from swarm.team.liveness import HOST_KEY, STOPPED_KEY, liveness
from swarm.team.members import is_mcp, member_identity, stop_member
from swarm.team.resume import prepare_resume
from swarm.team.signatures import (
    LEAD_KEY_FIELD,
    key_id,
    lead_mailbox,
    signatures_on,
    takes_verify_key,
    verify_key,
)
from teammate.api.model import has_api_key
from teammate.config.definitions import BUILT_IN, load_agent, to_flag_json
from teammate.options import MemberSpec, check_limits, command_line
from teammate.permissions.policy import rule_or_command_pattern

if TYPE_CHECKING:
    from protocols.store.contract import TeamFileContract


@dataclass(frozen=True)
class ShutdownResult:
    name: str
    # approved | rejected | no-answer | dead (nothing to ask: its process is gone) |
    # mcp-session (it cannot be asked) | removed (an MCP session, forced)
    outcome: str
    reason: str
    stopped: bool  # the member's process is gone and the member removed
    released: list[str]


@dataclass(frozen=True)
class RemoteLead:
    """A spawn a host agent does for a lead on another machine (`swarm.hosts`): the member is
    recorded as the host's (``swarmHost``), the teammate gets the lead's verify key (None:
    signatures off there), and its first message is the entry the lead signed, delivered as
    it is (`deliver_prompt(name)`), since the host holds no key of the lead's."""

    host: str
    verify_key: str | None
    deliver_prompt: Callable[[str], None]


SWARM_TEAMMATE = (sys.executable, "-m", "teammate")
GENERAL_PURPOSE = "general-purpose"
TEAMMATE_ENV = {"CLAUDECODE": "1", "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1"}  # as Claude Code
# a Claude Code teammate (--teammate-command) on a model newer than its list (claude-sonnet-5-5,
# the "sonnet" alias) has no Task tools without this (2.1.330 and 2.1.332): it needs the board
CLAUDE_CODE_TEAMMATE_ENV = {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}
START_WAIT_S = 30.0  # how long `swarm spawn` waits for a teammate to join before returning
FOREIGN_GRACE_S = 2.0  # how long a --teammate-command program is watched for an early exit


def foreign_program(command: str, model: str, swarm_only: Sequence[str]) -> list[str]:
    """`command` split into words, checked: it exists, it gets a Claude model, and none of
    swarm's own teammate options (`swarm_only`, as given) goes with it."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise SwarmError(f"--teammate-command {command!r}: {exc} (quote as in a shell)") from None
    if not words or shutil.which(words[0]) is None:
        raise SwarmError(
            f"--teammate-command {command!r}: {words[0] if words else 'nothing'!r} is not an "
            "executable file or a program on PATH"
        )
    if swarm_only:
        raise SwarmError(
            f"{' and '.join(swarm_only)} belong to swarm's own teammate; a --teammate-command "
            "program gets Claude Code's teammate command line only"
        )
    if ModelKind.of(model).offline:
        raise SwarmError(
            f"--model {model} is for swarm's own teammate; a --teammate-command program needs "
            "a Claude model: sonnet, opus, haiku or a model id"
        )
    return words


def check_model(model: str, agent_type: str, cwd: Path, environ: Mapping[str, str]) -> None:
    """Refuse, before anything is started, a Claude teammate that could not run (a misspelt
    model name first: ``--model shel`` is no Claude model needing a key)."""
    problem = model_name_problem(model)
    if problem is not None:
        raise SwarmError(problem)
    if ModelKind.of(model).offline:
        return
    if not has_api_key(environ):
        raise SwarmError(
            f"--model {model} needs ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the "
            "environment; use --model shell, or --script FILE for a scripted model, to work "
            "offline"
        )
    load_agent(agent_type, project_dir=cwd)  # a bad definition is an error here, not in the pane


def spawn_member(
    paths: TeamPaths,
    name: str,
    prompt: str,
    spec: MemberSpec | None = None,
    *,
    env: Mapping[str, str] | None = None,
    wait_s: float = START_WAIT_S,
    backend: SpawnBackend | None = None,
    lead: RemoteLead | None = None,
    color: str | None = None,
) -> tuple[Member, Spawned]:
    """Add `name` to the team, leave `prompt` as its first inbox message, start its process as
    `spec` says (recorded in the member entry, `member_spec` reads it back). `color`: its
    colour (default: the team's next, round robin; a restarted member keeps its own).

    ``spec.teammate_command`` starts that program instead of swarm's teammate, with Claude
    Code's teammate command line (``claude`` runs a real Claude Code teammate); either gets
    ``--lead-verify-key`` for the team's key (`swarm.team.signatures`); swarm's own
    flags (``--script``, ``--max-turns``...) are refused with it. ``spec.worktree`` (a slug)
    runs the teammate in its own git worktree; so does an agent definition with ``isolation:
    worktree`` (slug: the name). If the process cannot be started, or it exits before it joins
    the team (`await_start`, up to `wait_s` seconds), the member is removed again (and a worktree
    it did not change with it) and the error says why. `backend` replaces the one
    ``spec.backend`` names (unit tests pass a `swarm.backends.stub.StubBackend`). `lead`: a host
    agent spawning for a lead elsewhere (`RemoteLead`).
    """
    validate_name(name, "agent name")
    spec = settled(spec or MemberSpec())
    if spec.resume:
        # a conversation to carry on, and room for it
        prepare_resume(paths, name, spec, on_host=lead is not None)
    environ = env if env is not None else os.environ
    agent_type = spec.agent_type or GENERAL_PURPOSE
    program = _program(spec)
    check_model(spec.model, agent_type, Path(spec.cwd or "."), environ)
    check_limits(spec.max_cost, spec.max_tokens, spec.model, spec.max_time)
    if spec.max_cost is not None:
        check_priced(paths.root, spec.model)
    spec = _with_worktree(spec, name, agent_type)
    isolated = prepare(Path(spec.cwd or "."), spec.worktree) if spec.worktree else None
    directory = isolated.path if isolated is not None else Path(spec.cwd or ".")
    chosen = backend or choose_backend(
        spec.backend, environ, socket_name=environ.get("SWARM_TMUX_SOCKET") or None
    )
    team = open_store(paths).team_file()
    token = new_token()
    # a bad key file is refused before anything starts; a host uses the requesting lead's key
    # and makes no key of its own
    if lead is not None:
        lead_verify_key = lead.verify_key
    else:
        lead_verify_key = verify_key(paths) if _signs_for(spec, program, environ) else None
    member = team.add_member(
        name,
        agent_type=agent_type,
        model=spec.model,
        prompt=prompt,
        color=color,
        cwd=directory,
        plan_mode_required=spec.plan_mode_required,
        backend_type=chosen.backend_type,
        **({"mode": str(spec.permission_mode)} if spec.permission_mode else {}),
        **(member_fields(isolated) if isolated is not None else {}),
        swarmSpec=spec.to_value(),
        processToken=token,
        # while this process lives the member is "starting"; if it dies first, reap takes it
        spawnedBy=ProcessIdentity.mine().to_value(),
        **({HOST_KEY: lead.host} if lead is not None else {}),
        **({LEAD_KEY_FIELD: key_id(lead_verify_key)} if lead_verify_key else {}),
    )
    try:
        if lead is not None:
            lead.deliver_prompt(name)
        else:
            lead_mailbox(paths).send(name, prompt, sender=LEAD_NAME)
        argv = command_line(
            program,
            dataclasses.replace(spec.process_part(), agent_type=agent_type),
            name=name,
            team=paths.team,
            color=member.color,
            parent_session_id=team.load().leadSessionId,
            lead_verify_key=lead_verify_key,
        )
        env_vars = {"CLAUDE_CONFIG_DIR": str(paths.root), **TEAMMATE_ENV}
        if spec.teammate_command is not None:
            env_vars.update(CLAUDE_CODE_TEAMMATE_ENV)
        if paths.store is not None:  # a PostgreSQL team: the teammate finds it by this; never
            # a password on a command line (libpq's PGPASSWORD or ~/.pgpass give it one)
            env_vars[STORE_ENV] = redacted(paths.store)
        request = SpawnRequest(name, paths.team, argv, directory, env_vars, paths.log(name), token)
        spawned = chosen.spawn(request)
    except BaseException:
        team.remove_member(name)
        release(paths, member)
        raise
    updated = _record_process(team, name, spawned)
    if wait_s > 0 and spawned.pid:  # pid 0: nothing was started (the stub backend) to wait for
        foreign = spec.teammate_command is not None
        await_start(paths, updated, spawned, chosen, wait_s, foreign=foreign)
    return team.load().member(name) or updated, spawned


def _signs_for(spec: MemberSpec, program: list[str], environ: Mapping[str, str]) -> bool:
    """Whether the teammate gets ``--lead-verify-key``: swarm's own always, another program
    when it takes it (`takes_verify_key`), neither when signatures are off."""
    if not signatures_on():
        return False
    return spec.teammate_command is None or takes_verify_key(program, environ)


def _program(spec: MemberSpec) -> list[str]:
    """swarm's teammate, or the spec's other program (checked: it exists, gets a Claude model,
    and none of swarm's own flags)."""
    if spec.teammate_command is None:
        return list(SWARM_TEAMMATE)
    return foreign_program(spec.teammate_command, spec.model, spec.swarm_only())


def _with_worktree(spec: MemberSpec, name: str, agent_type: str) -> MemberSpec:
    """`spec` with its worktree: the one it names, else its name when the agent definition says
    ``isolation: worktree``. A teammate in a worktree gets its definition as ``--agents`` JSON,
    resolved here, where the project's agent files are (an uncommitted one would be missing in
    the worktree)."""
    directory = Path(spec.cwd or ".")
    worktree = spec.worktree
    if worktree is None and isolation_of(agent_type, directory) == "worktree":
        worktree = name
    agents = spec.agents
    if worktree is not None and spec.teammate_command is None and agents is None:
        agents = definition_json(spec.model, agent_type, directory)
    return dataclasses.replace(spec, worktree=worktree, agents=agents)


def _record_process(team: TeamFileContract, name: str, spawned: Spawned) -> Member:
    """Write where the member's process is (pane, backend, pid and start time, tmux socket)."""
    return team.update_member(
        name,
        tmuxPaneId=spawned.pane_id,
        backendType=spawned.backend_type,
        pid=spawned.pid,
        pidStart=spawned.start,
        **({"tmuxSocket": spawned.socket_name} if spawned.socket_name else {}),
    )


def settled(spec: MemberSpec) -> MemberSpec:
    """`spec` checked, with its paths made absolute (the teammate runs elsewhere) and a script
    implying the scripted model."""
    directory = Path(spec.cwd or Path.cwd()).resolve()
    if not directory.is_dir():
        raise SwarmError(f"--cwd {directory} is not a directory")
    model = spec.model
    if spec.script is not None and model == ModelKind.SHELL:
        model = ModelKind.SCRIPTED
    if model == ModelKind.SCRIPTED and spec.script is None:
        raise SwarmError("--model scripted needs --script FILE (a YAML list of model turns)")
    for text in spec.ask:
        try:
            rule_or_command_pattern(text)
        except ValueError as exc:
            raise SwarmError(f"--ask {text!r}: {exc}") from None

    def absolute(path: str | None) -> str | None:
        return str(Path(path).resolve()) if path is not None else None

    return dataclasses.replace(
        spec,
        model=str(model),
        cwd=str(directory),
        script=absolute(spec.script),
        settings=absolute(spec.settings),
        mcp_config=spec.mcp_config if _inline_json(spec.mcp_config) else absolute(spec.mcp_config),
    )


def _inline_json(text: str | None) -> bool:
    """``--mcp-config`` given as the JSON itself, not as a file."""
    return text is not None and text.lstrip().startswith("{")


def definition_json(model: str, agent_type: str, directory: Path) -> str | None:
    """The ``--agents`` JSON with the definition of `agent_type` as found from `directory` (None
    for the shell worker, which has none, or a built-in type, which every teammate knows)."""
    if ModelKind.of(model) == ModelKind.SHELL:
        return None
    definition = load_agent(agent_type, project_dir=directory)
    return None if definition.source == BUILT_IN else to_flag_json(definition)


def await_start(
    paths: TeamPaths,
    member: Member,
    spawned: Spawned,
    backend: SpawnBackend,
    wait_s: float = START_WAIT_S,
    foreign: bool = False,
) -> None:
    """Wait until the teammate has joined (its status file names its pid), or has exited: then
    its member entry is removed, its leftovers stopped, and `SpawnError` says why it could not
    start. A foreign program (`--teammate-command`) writes no status file: it is only watched
    for `FOREIGN_GRACE_S` for an early exit. A teammate still starting at the deadline is left
    to start (a slow machine): it is not an error."""

    def joined() -> bool:
        status = open_store(paths).read_status(member.name)
        return status is not None and status.pid == spawned.pid and status.state.live

    def exited() -> bool:
        return not backend.is_alive(spawned)

    limit = min(wait_s, FOREIGN_GRACE_S) if foreign else wait_s
    wait_until(lambda: exited() or (not foreign and joined()), limit)
    if not exited() or (not foreign and joined()):
        return
    reason = start_failure(paths, member.name, spawned)
    with contextlib.suppress(ProtocolsError, SwarmError):
        finish_shutdown(paths, member, approved=False)
    raise SpawnError(f"{member.name} exited as it started: {reason}")


def start_failure(paths: TeamPaths, name: str, spawned: Spawned) -> str:
    """Why a teammate stopped at start: its status file, else the end of its log."""
    status = open_store(paths).read_status(name)
    if status is not None and status.pid == spawned.pid and status.state == MemberState.FAILED:
        return status.activity or "it reported a failure"
    with contextlib.suppress(OSError):
        lines = safefs.read_text(paths.log(name)).strip().splitlines()
        if lines:
            return " / ".join(lines[-3:])
    return "it left no message (swarm logs NAME --process shows a subprocess teammate's output)"


def request_shutdown(
    paths: TeamPaths,
    name: str,
    reason: str | None = None,
    wait_s: float = 30.0,
    force: bool = False,
    *,
    keep: bool = False,
    on_asked: Callable[[], None] | None = None,
    on_answer: Callable[[], None] | None = None,
) -> ShutdownResult:
    """Ask `name` to shut down and wait for the answer; with `force`, stop it regardless.

    Only an answer from `name` itself counts (the entry's sender and the answer's ``from``): a
    forged approval from another member cannot stop it. The result lists every task of
    `name`'s that went back to pending, whether the teammate released it or the lead did.
    `keep`: the member stays in the team, stopped, remembering the tasks it held (`swarm
    stop`; `swarm start` brings it back). `on_asked` is called once the request is written;
    `on_answer` once the wait is over and the member is being stopped (a caller that is
    interrupted lets that part finish).
    """
    team = open_store(paths).team_file()
    if name == LEAD_NAME:
        raise SwarmError(f"{name!r} is the lead, not a teammate, in team {paths.team!r}")
    member = team.load().require(name)  # an unknown name: did you mean...
    board = open_store(paths).task_board()
    held = {t.id for t in board.list(include_internal=True) if t.owner == name and t.unfinished}
    state = liveness(paths).state(member)
    if state in (MemberState.DEAD, MemberState.STOPPED):  # nobody is there to answer: no wait
        if state == MemberState.STOPPED and keep:
            return ShutdownResult(name, "stopped", "it was stopped already", True, [])
        released = finish_shutdown(paths, member, approved=False, keep=keep, held=held)
        return ShutdownResult(name, "dead", "its process is gone", True, released)
    if is_mcp(member):  # an MCP client cannot answer a shutdown request: its session decides
        if not force:
            why = "it is an MCP session: it leaves when its client ends the session"
            return ShutdownResult(name, "mcp-session", why, False, [])
        released = finish_shutdown(paths, member, approved=False)
        return ShutdownResult(name, "removed", "an MCP session, removed", True, released)
    mailbox = lead_mailbox(paths)
    request_id = send_shutdown_request(paths, name, reason)
    if on_asked is not None:
        on_asked()
    found = mailbox.await_message(
        LEAD_NAME,
        lambda m: (
            isinstance(m, ShutdownApproved | ShutdownRejected)
            and m.requestId == request_id
            and m.from_ == name
        ),
        wait_s,
        sender=name,
    )
    answer = found[1] if found else None
    if isinstance(answer, ShutdownRejected) and not force:
        return ShutdownResult(name, "rejected", answer.reason, False, [])
    outcome = (
        "approved"
        if isinstance(answer, ShutdownApproved)
        else ("rejected" if isinstance(answer, ShutdownRejected) else "no-answer")
    )
    if outcome == "no-answer" and not force:
        return ShutdownResult(name, outcome, f"no answer within {wait_s:g} s", False, [])
    if on_answer is not None:
        on_answer()
    approved = outcome == "approved"
    returned = set(finish_shutdown(paths, member, approved=approved, keep=keep, held=held))
    for task_id in held:  # the teammate returns its tasks itself when it approves
        task = board.get(task_id)
        if task is not None and task.owner != name and task.status == TaskStatus.PENDING:
            returned.add(task_id)
    why = answer.reason if isinstance(answer, ShutdownRejected) else (reason or "")
    return ShutdownResult(name, outcome, why, True, sorted(returned, key=int))


def finish_shutdown(
    paths: TeamPaths,
    member: Member,
    approved: bool = True,
    keep: bool = False,
    held: Collection[str] = (),
) -> list[str]:
    """The lead's side of a shutdown: wait for the process to exit (briefly, if it approved),
    stop it and its pane, return its unfinished tasks to pending, remove the member. Safe to
    run twice (the CLI and `swarm lead` may both see the approval); returns released task ids.
    `keep`: the member stays, marked stopped, and the tasks it `held` stay its own (`swarm
    stop`: nobody else takes them before `swarm start` brings it back)."""
    if HOST_KEY in (member.model_extra or {}):  # it runs on a host: stopped there
        from swarm.team.host_requests import stop_on_host

        stop_on_host(paths, member, grace_s=5.0 if approved else 0.0)
    else:
        _wait_for_exit(member, 5.0 if approved else 0.0)
        stop_member(paths, member)
    released = [t.id for t in open_store(paths).task_board().release_all(member.name)]
    team = open_store(paths).team_file()
    if keep:
        try:
            with _listing(paths, member.name, "marked stopped in"):
                close_requests(paths, member.name, "it was stopped")
                team.update_member(member.name, isActive=False, **{STOPPED_KEY: now_ms()})
        finally:  # its tasks stay its own even when its entry could not be marked
            keep_assignment(paths, member.name, held)
        return []
    if team.load().member(member.name) is not None:
        with _listing(paths, member.name, "removed from"):
            close_requests(paths, member.name, "it shut down")
            team.remove_member(member.name)
            release(paths, member)  # only the one that removed it
    return released


class NotRemoved(SwarmError):
    """A member's process was stopped but its entry in the team could not be changed (its
    config.json stayed locked, by a paused process say). `swarm down` deletes the team anyway;
    `swarm stop` or `swarm shutdown` run again finish the change."""


@contextlib.contextmanager
def _listing(paths: TeamPaths, name: str, what: str) -> Iterator[None]:
    """Changing `name`'s entry once its process is gone: a member removed meanwhile (the CLI
    and `swarm lead` may both see one approval) is fine; any other failure is `NotRemoved`."""
    try:
        yield
    except UnknownMember:
        pass
    except ProtocolsError as exc:
        raise NotRemoved(
            f"{name} was stopped, but could not be {what} team {paths.team!r}: {exc}"
        ) from exc


def keep_assignment(paths: TeamPaths, name: str, held: Collection[str]) -> list[str]:
    """Give `name` back the tasks of `held` that went back to the board unowned when it
    stopped (and nobody took since): a restarted or stopped member keeps its work. Their ids."""
    board = open_store(paths).task_board()
    kept = []
    for task_id in sorted(held, key=lambda i: (len(i), i)):
        task = board.get(task_id)
        if task is not None and task.owner is None and task.status == TaskStatus.PENDING:
            with contextlib.suppress(ProtocolsError):
                board.update(task_id, owner=name)
                kept.append(task_id)
    return kept


def _wait_for_exit(member: Member, timeout: float) -> None:
    identity = member_identity(member)
    if identity is not None:
        wait_until(lambda: not identity.alive(), timeout)
