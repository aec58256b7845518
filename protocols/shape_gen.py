"""Writes the pydantic-free shapes (`protocols.records.plain`) from the pydantic models, so that
no one mirrors a model's fields by hand.

``python -m protocols.shape_gen`` (``make shapes``) writes every module of `GENERATED` from the
models it names; ``--check`` only says which are not current (`tests/unit/test_shape_gen.py`
runs it, so a model changed without its shape fails the suite). A field becomes a `Field` with
the check of its type as its JSON holds it (exactly the JSON type: `protocols.records.plain`),
its default or factory, its key (an alias) and, for a nested model, the shape of that model.
What a shape adds to its model's fields (`PermissionResponse`'s rule and property) is written by
hand where the shapes are used (`protocols.messages.shapes`).

Only developers run it: it imports pydantic and the models, and formats with ruff.
"""

from __future__ import annotations

import argparse
import enum
import importlib
import re
import subprocess
import sys
import textwrap
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Spec:
    """One shape: its constant's name and the model (``module:Class``) it mirrors; `records`,
    the fields whose nested models are each read as a record of its own (their key order kept)."""

    const: str
    model: str
    records: tuple[str, ...] = ()


@dataclass(frozen=True)
class Generated:
    """One generated module: its docstring and its shapes, in order (a nested model's shape
    before its parent's); `group`, a tuple of all of them under that name."""

    doc: str
    specs: tuple[Spec, ...]
    group: str | None = None


def _messages(*names: str) -> tuple[Spec, ...]:
    snake = (re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper() for name in names)
    return tuple(
        Spec(const, f"protocols.messages.models:{name}")
        for const, name in zip(snake, names, strict=True)
    )


GENERATED: dict[str, Generated] = {
    "protocols/team/shape.py": Generated(
        "The shapes of the team file (`protocols.team.model`)",
        (
            Spec("MEMBER", "protocols.team.model:Member"),
            Spec("TEAM_CONFIG", "protocols.team.model:TeamConfig", records=("members",)),
        ),
    ),
    "protocols/tasks/shape.py": Generated(
        "The shape of a task file (`protocols.tasks.model`), so `swarm status` reads a board "
        "without pydantic",
        (Spec("TASK", "protocols.tasks.model:Task"),),
    ),
    "protocols/member/shape.py": Generated(
        "The shapes of a member's status file (`protocols.member.status`), so a look at 200 "
        "members builds no model",
        tuple(
            Spec(const, f"protocols.member.status:{name}")
            for const, name in (
                ("SUBAGENT_STATUS", "SubAgentStatus"),
                ("MCP_SERVER_STATUS", "McpServerStatus"),
                ("SHELL_STATUS", "ShellStatus"),
                ("BUDGET_STATUS", "BudgetStatus"),
                ("AGENT_STATUS", "AgentStatus"),
            )
        ),
    ),
    "protocols/inbox/entry_shape.py": Generated(
        "The shape of an inbox entry (`protocols.inbox.entry`); `protocols.inbox.shape` reads "
        "entries by it",
        (Spec("INBOX_ENTRY", "protocols.inbox.entry:InboxEntry"),),
    ),
    "protocols/messages/shape.py": Generated(
        "The shapes of the structured messages (`protocols.messages.models`); "
        "`protocols.messages.shapes` puts them to use",
        _messages("HostPattern", "PermissionResponseBody", "PermissionRule", "PermissionUpdate")
        + _messages(
            "IdleNotification",
            "ShutdownRequest",
            "ShutdownApproved",
            "ShutdownRejected",
            "PlanApprovalRequest",
            "PlanApprovalResponse",
            "PermissionRequest",
            "PermissionResponse",
            "SandboxPermissionRequest",
            "SandboxPermissionResponse",
            "TaskAssignment",
            "ModeSetRequest",
            "TeamPermissionUpdate",
            "TeammateTerminated",
            "CompactRequest",
        ),
        group="MESSAGES",
    ),
}
# the nested-record helpers, not messages themselves, are left out of `group`
_NOT_MESSAGES = {"HOST_PATTERN", "PERMISSION_RESPONSE_BODY", "PERMISSION_RULE", "PERMISSION_UPDATE"}
_PLAIN = {str: "STR", int: "INT", float: "FLOAT", bool: "BOOL"}
_OPTIONAL = {"STR": "OPT_STR", "INT": "OPT_INT", "BOOL": "OPT_BOOL"}


class Writer:
    """The source of one generated module: its shapes, and the names they need imported."""

    def __init__(self, shapes_of: dict[type, str]) -> None:
        self.shapes_of = shapes_of  # a model's shape constant, for the fields that nest it
        self.plain: set[str] = {"Field", "Shape"}  # names from protocols.records.plain
        self.imports: set[tuple[str, str]] = set()  # (module, name) from elsewhere

    def check(self, annotation: Any, metadata: list[Any]) -> str:
        """The check of a value of `annotation` as JSON holds it."""
        pattern = next((m.pattern for m in metadata if getattr(m, "pattern", None)), None)
        if pattern is not None:
            self.plain.add("matching")
            return f"matching({_anchorless(pattern)!r})"
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is typing.Annotated:
            return self.check(args[0], list(args[1:]))
        if origin in (typing.Union, types.UnionType):
            inner = [a for a in args if a is not type(None)]
            assert len(inner) == 1 and len(args) == 2, f"unsupported union {annotation}"
            plain = _PLAIN.get(inner[0], "")
            if plain in _OPTIONAL:  # OPT_STR rather than optional(STR)
                return self._name(_OPTIONAL[plain])
            self.plain.add("optional")
            return f"optional({self.check(inner[0], [])})"
        if origin is typing.Literal:
            self.plain.add("one_of")
            return f"one_of({', '.join(repr(a) for a in args)})"
        if origin is list:
            return self._container("LIST", "list_of", args[0])
        if origin is dict:
            return self._container("DICT", "dict_of", args[1])
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            self.plain.add("one_of")
            self.imports.add((annotation.__module__, annotation.__name__))
            return f"one_of(*{annotation.__name__})"
        assert annotation in _PLAIN, f"no check for {annotation!r}"
        return self._name(_PLAIN[annotation])

    def _container(self, whole: str, of: str, item: Any) -> str:
        if item is Any:
            return self._name(whole)
        self.plain.add(of)
        return f"{of}({self.check(item, [])})"

    def _name(self, name: str) -> str:
        self.plain.add(name)
        return name

    def field(self, name: str, info: Any, record: bool) -> str:
        """``name=Field(...)`` for the model field `info`."""
        from pydantic_core import PydanticUndefined

        nested, many, optional = _nested(info.annotation)
        if nested is not None:
            parts = [f"shape={self.shapes_of[nested]}"]
            parts += ["many=True"] if many else []
        else:
            parts = [self.check(info.annotation, list(info.metadata))]
        if info.alias and info.alias != name:
            parts.append(f"key={info.alias!r}")
        if info.default_factory is not None:
            parts.append(f"factory={self._factory(info.default_factory)}")
        elif info.default is not PydanticUndefined:
            default = info.default
            value = default.value if isinstance(default, enum.Enum) else default
            parts.append(f"default={value!r}")
        else:
            assert not optional or nested is None, f"{name}: an optional record needs a default"
        if record:
            parts.append("record=True")
        return f"{name}=Field({', '.join(parts)})"

    def _factory(self, factory: Callable[[], Any]) -> str:
        if factory in (list, dict):
            return factory.__name__
        assert "<lambda>" not in factory.__qualname__, f"name the factory {factory!r}"
        self.imports.add((factory.__module__, factory.__qualname__))
        return factory.__qualname__

    def shape(self, spec: Spec, model: Any) -> str:
        fields = [
            self.field(name, info, name in spec.records)
            for name, info in model.model_fields.items()
        ]
        body = "".join(f"    {f},\n" for f in fields)
        return f'{spec.const} = Shape(\n    "{model.__name__}",\n{body})\n'


def _anchorless(pattern: str) -> str:
    """`pattern` without ``^`` and ``$``: a shape matches the whole value anyway."""
    return pattern.removeprefix("^").removesuffix("$")


def _nested(annotation: Any) -> tuple[Any, bool, bool]:
    """(the nested model, a list of them, optional) when `annotation` holds a model; else
    (None, False, optional)."""
    from pydantic import BaseModel

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    optional = origin in (typing.Union, types.UnionType) and type(None) in args
    if optional:
        annotation = next(a for a in args if a is not type(None))
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    many = origin is list
    item = args[0] if many else annotation
    if isinstance(item, type) and issubclass(item, BaseModel):
        return item, many, optional
    return None, False, optional


def _model(dotted: str) -> Any:
    module, name = dotted.split(":")
    return getattr(importlib.import_module(module), name)


def module_source(path: str, generated: Generated) -> str:
    """The whole generated module, formatted as ruff formats it."""
    models = [_model(spec.model) for spec in generated.specs]
    writer = Writer({m: s.const for m, s in zip(models, generated.specs, strict=True)})
    shapes = "\n\n".join(writer.shape(s, m) for s, m in zip(generated.specs, models, strict=True))
    group = ""
    if generated.group:
        members = [s.const for s in generated.specs if s.const not in _NOT_MESSAGES]
        group = f"\n\n{generated.group} = ({', '.join(members)},)\n"
    imports = [f"from protocols.records.plain import {', '.join(sorted(writer.plain))}"]
    imports += [f"from {module} import {name}" for module, name in sorted(writer.imports)]
    about = (
        f"{generated.doc}. Generated by `protocols.shape_gen` from the models (``make shapes``): "
        "do not edit by hand."
    )
    doc = '"""' + "\n".join(textwrap.wrap(about, 96)) + '"""\n'

    source = f"{doc}\nfrom __future__ import annotations\n\n" + "\n".join(imports)
    return _formatted(f"{source}\n\n{shapes}{group}", path)


def _formatted(source: str, path: str) -> str:
    ruff = [sys.executable, "-m", "ruff"]
    fixed = subprocess.run(
        [*ruff, "check", "--select", "I", "--fix", "--stdin-filename", path, "-"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return subprocess.run(
        [*ruff, "format", "--stdin-filename", path, "-"],
        input=fixed,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout


def stale() -> list[str]:
    """The generated modules whose file is not what the models make now."""
    return [
        path
        for path, generated in GENERATED.items()
        if not (ROOT / path).exists() or (ROOT / path).read_text() != module_source(path, generated)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m protocols.shape_gen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only say what is not current")
    args = parser.parse_args(argv)
    if args.check:
        behind = stale()
        for path in behind:
            print(f"{path} is not what the models make: run make shapes", file=sys.stderr)
        return 1 if behind else 0
    for path, generated in GENERATED.items():
        (ROOT / path).write_text(module_source(path, generated))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
