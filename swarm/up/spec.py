"""The team file of `swarm up` (YAML): its schema as Pydantic models, and `load_team_file`.

Loading checks all that can be checked before anything runs: YAML syntax, unknown keys, types,
names, permission rules, task references and cycles, script files, directories. Each problem is
reported as ``<file>:<line>: <key path>: <what was expected>``, all at once, in one
`TeamFileError`: the references between members and tasks (owners, ``blocked_by``, names
taken twice) are checked in the same pass as the schema, on the values as written
(`_as_written`), so that fixing one problem never reveals another that was there all along.
Relative paths are resolved against the team file's directory.
`swarm.up.apply.plan_up` turns a loaded `TeamSpec` into what `swarm up` starts.
"""

from __future__ import annotations

import graphlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from protocols.durations import HELP as DURATION_HELP
from protocols.durations import BadDuration, parse_duration
from protocols.names import LEAD_NAME, validate_name
from protocols.values import ModelKind, PermissionMode
from swarm.backends.base import BACKEND_KINDS
from swarm.errors import SwarmError
from teammate.api.script import ScriptError, load_script
from teammate.permissions.policy import parse_rule

Loc = tuple[int | str, ...]
Problem = tuple[Loc, str]
MODELS_HELP = "shell, scripted, sonnet, opus, haiku or a model id"


class TeamFileError(SwarmError):
    """A team file that cannot be used; the message names the file, line, key and expectation."""


def _check(test: Any, expected: str, before: bool = False) -> Any:
    def check(value: Any) -> Any:
        if not test(value):
            raise ValueError(f"expected {expected}, got {value!r}")
        return value

    return BeforeValidator(check) if before else AfterValidator(check)


def _choice(choices: tuple[str, ...]) -> Any:
    return _check(lambda v: v in choices, f"one of {', '.join(choices)}", before=True)


def _rule(value: str) -> str:
    parse_rule(value)  # its ValueError says what is malformed
    return value


def _path(value: str, info: ValidationInfo, kind: str) -> str:
    base = Path((info.context or {}).get("base") or Path.cwd())
    path = (base / Path(value).expanduser()).resolve()
    if kind == "directory" and not path.is_dir():
        raise ValueError(f"expected a directory, but {path} is not one")
    if kind == "script":
        if not path.is_file():
            raise ValueError(f"expected a script file (a YAML list of model turns): no file {path}")
        try:
            load_script(path)
        except ScriptError as exc:
            raise ValueError(f"expected a script file: {exc}") from None
    return str(path)


Text = Annotated[str, _check(str.strip, "a non-empty string")]
TeamName = Annotated[str, AfterValidator(lambda v: validate_name(v, "team name"))]
AgentName = Annotated[str, AfterValidator(lambda v: validate_name(v, "agent name"))]
ModelName = Annotated[str, _check(lambda v: v.split() == [v], MODELS_HELP)]
Backend = Annotated[str, _choice(BACKEND_KINDS)]
Mode = Annotated[str, _choice(PermissionMode.names())]
Rules = list[Annotated[str, AfterValidator(_rule)]]
Directory = Annotated[str, AfterValidator(lambda v, info: _path(v, info, "directory"))]
Script = Annotated[str, AfterValidator(lambda v, info: _path(v, info, "script"))]
Usd = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Tokens = Annotated[int, Field(gt=0)]


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected {DURATION_HELP}, got {value!r}")
    try:
        return parse_duration(str(value))
    except BadDuration:
        raise ValueError(f"expected {DURATION_HELP}, got {value!r}") from None


Seconds = Annotated[float, BeforeValidator(_seconds)]  # "2h", "30m", 90 (seconds)
TaskRef = Annotated[
    int | str,
    _check(lambda v: type(v) in (int, str), "a task key or a 1-based position", before=True),
]


def _one_or_many(value: Any) -> Any:
    """``for: shell`` as ``for: [shell]``."""
    return [value] if isinstance(value, str) else value


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _absent_when_empty(cls, data: Any) -> Any:
        """``key:`` with no value counts as not given (YAML reads it as null)."""
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data


class Defaults(_Spec):
    model: ModelName | None = None
    backend: Backend | None = None
    permission_mode: Mode | None = None
    cwd: Directory | None = None


class BudgetSpec(_Spec):
    """The team's ``budget:``: each member's limits unless it gives its own (a shell worker,
    which makes no model calls, has none), and ``team_max_cost``/``team_max_tokens``: what all
    of them may spend together (`swarm team budget`)."""

    max_cost: Usd | None = None
    max_tokens: Tokens | None = None
    max_time: Seconds | None = None
    team_max_cost: Usd | None = None
    team_max_tokens: Tokens | None = None
    team_max_time: Seconds | None = None  # from when the team is brought up


class MemberSpec(_Spec):
    name: AgentName
    prompt: Text
    agent_type: Text | None = None
    model: ModelName | None = None
    backend: Backend | None = None
    script: Script | None = None
    max_turns: Annotated[int, Field(ge=1)] | None = None
    max_cost: Usd | None = None  # its budget (`swarm spawn --max-cost`), over the team's
    max_tokens: Tokens | None = None
    max_time: Seconds | None = None  # how long it may run (`swarm spawn --max-time`)
    plan_mode_required: bool = False
    permission_mode: Mode | None = None
    allow: Rules = Field(default_factory=list)
    deny: Rules = Field(default_factory=list)
    ask: Rules = Field(default_factory=list)
    cwd: Directory | None = None
    isolation: Literal["worktree"] | None = None
    # MCP servers as in .mcp.json (name -> server), written to the member's --settings file
    mcp_servers: dict[str, dict[str, Any]] = Field(default_factory=dict)


class TaskSpec(_Spec):
    subject: Text
    description: str = ""
    command: Text | None = None
    key: Text | None = None
    blocked_by: list[TaskRef] = Field(default_factory=list)
    owner: AgentName | None = None
    worktree: Text | None = None  # the task is worked in this git worktree
    # who may take it (`protocols.tasks.task.may_take`): shell, claude, a member or an agent type
    for_: Annotated[list[AgentName], BeforeValidator(_one_or_many)] | None = Field(
        None, alias="for"
    )


class LeadSpec(_Spec):
    model: ModelName | None = None
    auto_approve: Rules = Field(default_factory=list)
    auto_deny: Rules = Field(default_factory=list)
    max_cost: Usd | None = None  # the lead agent's own budget (`swarm lead --max-cost`)
    max_tokens: Tokens | None = None


class TeamSpec(_Spec):
    team: TeamName
    description: str | None = None
    # a PostgreSQL URL (`protocols.store.selection`): the team lives there; checked when the file
    # loads
    store: str | None = None
    defaults: Defaults = Field(default_factory=Defaults)
    members: Annotated[list[MemberSpec], Field(min_length=1)]
    tasks: list[TaskSpec] = Field(default_factory=list)
    lead: LeadSpec | None = None
    budget: BudgetSpec = Field(default_factory=BudgetSpec)
    _source: Path | None = PrivateAttr(default=None)

    @property
    def source(self) -> Path | None:
        """The team file this was loaded from (relative paths were resolved against its folder)."""
        return self._source

    def model_of(self, member: MemberSpec) -> str:
        """The model a member runs: a script makes it ``scripted``, else its own or the default."""
        if member.script is not None:
            return "scripted"
        return member.model or self.defaults.model or "shell"

    def limits_of(self, member: MemberSpec) -> tuple[float | None, int | None, float | None]:
        """A member's budget (USD, tokens, seconds): its own, else the team's; none for a shell
        worker."""
        if ModelKind.of(self.model_of(member)) == ModelKind.SHELL:
            return None, None, None
        return (
            member.max_cost if member.max_cost is not None else self.budget.max_cost,
            member.max_tokens if member.max_tokens is not None else self.budget.max_tokens,
            member.max_time if member.max_time is not None else self.budget.max_time,
        )


_SECTIONS = {
    "defaults": Defaults,
    "members": MemberSpec,
    "tasks": TaskSpec,
    "lead": LeadSpec,
    "budget": BudgetSpec,
}
_LISTS = {
    "members": "a list of members (mappings with name and prompt)",
    "tasks": "a list of tasks (mappings with subject)",
    "blocked_by": "a list of task keys or 1-based positions",
}
_TYPES = {
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "bool_type": "expected true or false",
    "model_type": "expected a mapping",
    "greater_than_equal": "expected an integer >= 1",
    "greater_than": "expected a number > 0",
    "float_type": "expected a number",
    "finite_number": "expected a finite number",
    "too_short": "expected at least one entry",
    "missing": "required, but missing",
}


def load_team_file(path: Path) -> TeamSpec:
    """Read and check a team file; `TeamFileError` lists every problem found."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TeamFileError(f"cannot read team file {path}: {exc.strerror or exc}") from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        context = exc.context if exc.problem and exc.context else ""
        if context and exc.context_mark is not None:
            context = f" ({context} from line {exc.context_mark.line + 1})"
        raise TeamFileError(
            f"{where}: not valid YAML: {exc.problem or exc.context}{context}"
        ) from None
    except yaml.YAMLError as exc:
        raise TeamFileError(f"{path}: not valid YAML: {exc}") from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise TeamFileError(
            f"{path}: expected a mapping with the keys {', '.join(TeamSpec.model_fields)}, "
            f"got {_shown(data) if data is not None else 'an empty file'}"
        )
    problems = list(_duplicate_keys(node, ()))
    try:
        spec = TeamSpec.model_validate(data, context={"base": path.resolve().parent})
    except ValidationError as exc:
        refused = [_problem(error) for error in exc.errors()]
        written = _cross_check(_as_written(data))
        problems += refused + _apart(written, [loc for loc, _ in refused])
    else:
        spec._source = path.resolve()
        problems += _cross_check(spec)
    if problems:
        found = sorted((_line(node, loc), key_path(loc), text) for loc, text in problems)
        raise TeamFileError("\n".join(f"{path}:{n}: {key}: {text}" for n, key, text in found))
    return spec


def key_path(loc: Loc) -> str:
    """``("members", 1, "allow", 0)`` -> ``members[1].allow[0]``."""
    text = ""
    for step in loc:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text or "(top level)"


def _problem(error: Any) -> Problem:
    loc, kind = tuple(error["loc"]), error["type"]
    if kind == "value_error":
        return loc, str(error["ctx"]["error"])
    if kind == "extra_forbidden":
        section = next((s for s in reversed(loc[:-1]) if isinstance(s, str)), "")
        allowed = _SECTIONS.get(section, TeamSpec).model_fields  # type: ignore[attr-defined]
        return loc, f"unknown key; expected one of {', '.join(allowed)}"
    if kind == "list_type":
        what = _LISTS.get(str(loc[-1]), "a list of permission rules (strings)")
        return loc, f"expected {what}, got {_shown(error['input'])}"
    text = _TYPES.get(kind, error["msg"])
    got = "" if kind in ("missing", "too_short") else f", got {_shown(error['input'])}"
    return loc, text + got


def _shown(value: Any) -> str:
    return {dict: "a mapping", list: "a list"}.get(type(value), repr(value))  # type: ignore[call-overload]


def _as_written(data: dict[str, Any]) -> TeamSpec:
    """A `TeamSpec` of a file that failed its schema, unchecked, with what `_cross_check` reads
    taken as written wherever it has the right type (else left out), so that the references
    between members and tasks are checked in the same pass as the schema."""

    def pick(raw: Any, key: str, *types: type) -> Any:
        value = raw.get(key) if isinstance(raw, dict) else None
        return value if type(value) in types else None

    def listed(key: str) -> list[Any]:
        value = data.get(key)
        return value if isinstance(value, list) else []

    def refs(raw: Any) -> list[Any]:  # a reference of the wrong type: "", a key of no task
        return [r if type(r) in (int, str) else "" for r in pick(raw, "blocked_by", list) or []]

    owners = isinstance(data.get("members"), list)  # else no owner can be judged
    members = [
        MemberSpec.model_construct(
            name=pick(m, "name", str),
            prompt="",
            script=pick(m, "script", str),
            model=pick(m, "model", str),
            max_cost=pick(m, "max_cost", int, float),
            max_tokens=pick(m, "max_tokens", int),
        )
        for m in listed("members")
    ]
    tasks = [
        TaskSpec.model_construct(
            subject=pick(t, "subject", str) or "",
            key=pick(t, "key", str),
            owner=pick(t, "owner", str) if owners else None,
            blocked_by=refs(t),
        )
        for t in listed("tasks")
    ]
    defaults = Defaults.model_construct(model=pick(data.get("defaults"), "model", str))
    team = pick(data, "team", str) or ""
    return TeamSpec.model_construct(team=team, members=members, tasks=tasks, defaults=defaults)


def _apart(problems: list[Problem], reported: list[Loc]) -> list[Problem]:
    """`problems` but those at (or inside, or around) a place already `reported`: a value the
    schema refused is not judged again."""

    def overlaps(loc: Loc, other: Loc) -> bool:
        n = min(len(loc), len(other))
        return loc[:n] == other[:n]

    return [(loc, text) for loc, text in problems if not any(overlaps(loc, r) for r in reported)]


def _cross_check(spec: TeamSpec) -> list[Problem]:
    """What one field cannot tell: unique names, model, script and rules together, tasks."""
    problems: list[Problem] = []
    names: dict[str, int] = {}
    for i, member in enumerate(spec.members):
        at: Loc = ("members", i)
        if member.name == LEAD_NAME or member.name in names:
            taken = "the lead's" if member.name == LEAD_NAME else f"members[{names[member.name]}]'s"
            problems.append(((*at, "name"), f"{member.name!r} is {taken} name; expected another"))
        names.setdefault(member.name, i)
        model = spec.model_of(member)
        if member.script is not None and member.model not in (None, "scripted"):
            why = f"a script plays a scripted model; expected scripted, got {member.model!r}"
            problems.append(((*at, "model"), why))
        if model == ModelKind.SCRIPTED and member.script is None:
            problems.append(((*at, "model"), "model scripted needs script: FILE (model turns)"))
        for key in ("max_cost", "max_tokens", "max_time"):
            if getattr(member, key, None) is not None and ModelKind.of(model) == ModelKind.SHELL:
                why = "a shell worker makes no model calls, so it has no budget"
                problems.append(((*at, key), f"{why}; expected a member with a Claude model"))
    keys: dict[str, int] = {}
    owners: dict[str, int] = {}
    # what a task's `for` may name: a kind, a member of the file, an agent type of one
    takers = {"shell", "claude", "scripted", *names}
    takers |= {m.agent_type for m in spec.members if m.agent_type}
    for i, task in enumerate(spec.tasks):
        if task.key is not None and keys.setdefault(task.key, i) != i:
            problems.append((("tasks", i, "key"), f"{task.key!r} is tasks[{keys[task.key]}]'s key"))
        for j, label in enumerate(task.for_ or []):
            if label not in takers:
                known = ", ".join(sorted(takers))
                problems.append((("tasks", i, "for", j), f"expected one of {known}; got {label!r}"))
        if task.owner is not None and task.owner not in names:
            problems.append((("tasks", i, "owner"), f"expected a member, got {task.owner!r}"))
        elif task.owner is not None and owners.setdefault(task.owner, i) != i:
            # a teammate refuses a second unfinished task of its own (agent_busy): both would wait
            why = f"{task.owner!r} already owns tasks[{owners[task.owner]}]"
            problems.append((("tasks", i, "owner"), f"{why}; expected one task per owner"))
    bad: list[Problem] = []
    edges = resolve_blocked_by(spec.tasks, bad)
    return problems + bad + _cycles(spec.tasks, edges)  # a cycle of the good references too


def resolve_blocked_by(tasks: list[TaskSpec], bad: list[Problem] | None = None) -> list[list[int]]:
    """For each task, the 0-based indexes of the tasks it waits for; a reference to no task is
    left out (and reported into `bad`)."""
    keys: dict[str, int] = {}
    for i, task in enumerate(tasks):
        keys.setdefault(task.key or "", i)
    keys.pop("", None)
    edges: list[list[int]] = []
    for i, task in enumerate(tasks):
        edges.append([])
        for j, ref in enumerate(task.blocked_by):
            target = keys.get(ref) if isinstance(ref, str) else ref - 1
            if target is not None and 0 <= target < len(tasks) and target != i:
                edges[i] += [] if target in edges[i] else [target]
            elif bad is not None:
                what = "itself" if target == i else f"unknown task {ref!r}"
                known = f"a key ({', '.join(keys)}) or " if keys else ""
                expected = f"expected {known}a position 1-{len(tasks)} of another task"
                bad.append((("tasks", i, "blocked_by", j), f"{what}; {expected}"))
    return edges


def _cycles(tasks: list[TaskSpec], edges: list[list[int]]) -> list[Problem]:
    try:
        graphlib.TopologicalSorter(dict(enumerate(edges))).prepare()
    except graphlib.CycleError as exc:
        cycle = exc.args[1][::-1]  # graphlib lists each blocker before the task it blocks
        label = " waits for ".join(tasks[i].key or f"tasks[{i}]" for i in cycle)
        return [(("tasks", cycle[0], "blocked_by"), f"dependency cycle: {label}")]
    return []


def _duplicate_keys(node: yaml.Node | None, loc: Loc) -> Iterator[Problem]:
    """PyYAML keeps the last of two equal keys silently; a team file may not have any."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if str(key.value) in seen:
                yield (*loc, str(key.value)), "duplicate key (YAML would keep only the last one)"
            seen.add(str(key.value))
            yield from _duplicate_keys(value, (*loc, str(key.value)))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _duplicate_keys(item, (*loc, index))


def _line(node: yaml.Node | None, loc: Loc) -> int:
    """The 1-based line of the deepest node on `loc`'s way found in the YAML tree."""
    line = node.start_mark.line + 1 if node is not None else 1
    for step in loc:
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in reversed(node.value) if k.value == step), None)
            if pair is None:
                break
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value)
        ):
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            break
    return line
