"""The pydantic-free shapes are generated from the models (`protocols.shape_gen`): the committed
modules are what the models make now, and each kind of field becomes the check its JSON needs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from protocols.records.base import Record
from protocols.shape_gen import GENERATED, Spec, Writer, module_source, stale
from protocols.values import TaskStatus


def test_every_generated_module_is_what_the_models_make_now() -> None:
    assert stale() == [], "a model changed without its shape: run make shapes"


class Inner(Record):
    note: str


class Example(Record):
    name: str
    count: int = 0
    ratio: float | None = None
    flag: bool | None = None
    kind: Literal["a", "b"] = "a"
    status: TaskStatus = TaskStatus.PENDING
    tags: list[str] = Field(default_factory=list)
    extra: dict[str, Any] | None = None
    usage: dict[str, int] = Field(default_factory=dict)
    code: Annotated[str, StringConstraints(pattern=r"^[0-9]+$")]
    sender: str = Field(alias="from")
    inner: Inner | None = None
    inners: list[Inner] = Field(default_factory=list)


def test_each_kind_of_field_becomes_the_check_its_json_needs() -> None:
    writer = Writer({Inner: "INNER"})
    source = writer.shape(Spec("EXAMPLE", "tests:Example", records=("inners",)), Example)
    assert source.splitlines() == [
        "EXAMPLE = Shape(",
        '    "Example",',
        "    name=Field(STR),",
        "    count=Field(INT, default=0),",
        "    ratio=Field(optional(FLOAT), default=None),",
        "    flag=Field(OPT_BOOL, default=None),",
        "    kind=Field(one_of('a', 'b'), default='a'),",
        "    status=Field(one_of(*TaskStatus), default='pending'),",
        "    tags=Field(list_of(STR), factory=list),",
        "    extra=Field(optional(DICT), default=None),",
        "    usage=Field(dict_of(INT), factory=dict),",
        "    code=Field(matching('[0-9]+')),",
        "    sender=Field(STR, key='from'),",
        "    inner=Field(shape=INNER, default=None),",
        "    inners=Field(shape=INNER, many=True, factory=list, record=True),",
        ")",
    ]
    assert writer.imports == {("protocols.values", "TaskStatus")}
    assert "BOOL" not in writer.plain and "OPT_BOOL" in writer.plain  # only what is used


def test_a_generated_module_is_formatted_and_says_it_is_generated() -> None:
    path = "protocols/tasks/shape.py"
    source = module_source(path, GENERATED[path])
    assert "do not edit by hand" in " ".join(source.split()) and "TASK = Shape(" in source
    assert all(len(line) <= 100 for line in source.splitlines())
