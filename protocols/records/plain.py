"""Records read without their pydantic models, for a process that looks once and must start fast
(``swarm status``): importing pydantic and building the models a look needs costs more than the
rest of the look.

A `Shape` lists a model's fields as its JSON holds them: each field's key, a check of its value
and its default. `Shape.read` takes a decoded JSON object only when it is plainly what the model
accepts *unchanged*: every required key there, and every key the model knows holding exactly the
JSON type the model takes (no coercion: an int is no float, a bool no int, ``"3"`` no number; a
nested record plain in its turn). Anything else gives None, and the caller asks the model, which
judges it as it always did (refusing it, or accepting it coerced). So a shape never refuses
anything, and never accepts what the model would turn into something else; a check may only be
stricter than the model's, never looser.

What it gives, a `Plain`, reads as the model does: each field by its name (``from_`` for the key
``from``), the model's default when the key is missing, a nested record as a `Plain`; `to_json_dict`
in the key order `protocols.records.base.Record` keeps (a nested record, or a message, dumped as
pydantic dumps a model: fields in order, then unknown keys, without nulls); `model_dump`. Unknown
keys are kept, as the models keep them.

`tests/unit/test_plain.py` holds each shape against its model: the same keys, required ones and
defaults, and, for generated JSON, never plain where the model refuses or changes a value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

Check = Callable[[Any], bool]
_REQUIRED = object()  # the default of a field without one


def exactly(*types: type) -> Check:
    """A value of exactly one of `types` (JSON decodes to exact built-in types)."""
    kinds = frozenset(types)
    return lambda value: type(value) in kinds


STR = exactly(str)
INT = exactly(int)
FLOAT = exactly(float)
BOOL = exactly(bool)
LIST = exactly(list)  # list[Any]
DICT = exactly(dict)  # dict[str, Any]: JSON object keys are strings


def anything(value: Any) -> bool:
    return True


def optional(check: Check) -> Check:
    return lambda value: value is None or check(value)


def list_of(check: Check) -> Check:
    return lambda value: type(value) is list and all(map(check, value))


def dict_of(check: Check) -> Check:
    return lambda value: type(value) is dict and all(map(check, value.values()))


def one_of(*values: str) -> Check:
    """A string among `values` (a `Literal`, or a `StrEnum` read from its text)."""
    allowed = frozenset(values)
    return lambda value: type(value) is str and value in allowed


def matching(pattern: str) -> Check:
    """A string `pattern` matches whole (`re.fullmatch`: no newline slips past a ``$``)."""
    compiled = re.compile(pattern)
    return lambda value: type(value) is str and compiled.fullmatch(value) is not None


class Field:
    """One field of a model: its name, its key in the JSON, its check and its default (a JSON
    value, copied when it is a list or a dict; or made by `factory`). A nested record has its
    `shape` (`many`: a list of them), checked by that shape; `record`: each is read as a
    `Record` of its own (its key order kept, as `TeamConfig` reads its members)."""

    __slots__ = ("check", "default", "factory", "key", "many", "name", "record", "shape")

    def __init__(
        self,
        check: Check | None = None,
        default: Any = _REQUIRED,
        *,
        key: str | None = None,
        factory: Callable[[], Any] | None = None,
        shape: Shape | None = None,
        many: bool = False,
        record: bool = False,
    ) -> None:
        self.name = ""  # set by the shape
        self.key = key or ""
        self.default = default
        self.factory = factory
        self.shape = shape
        self.many = many
        self.record = record
        if shape is not None:
            inner = shape.accepts
            check = list_of(inner) if many else inner
            check = optional(check) if default is None else check
        assert check is not None, "a field needs a check or a shape"
        self.check = check

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED and self.factory is None

    def missing(self) -> Any:
        """Its value when its key is missing (`required` fields never are, in a plain record)."""
        if self.factory is not None:
            return self.factory()
        default = self.default
        return type(default)(default) if type(default) in (list, dict) else default


class Shape:
    """The fields of one model, by name; `read` a JSON object as a `Plain` of it. The model's name,
    a check of the whole record (the model's own validator) and the model's properties a reader
    asks for come first, by position, so that a field may be called ``name``."""

    def __init__(
        self,
        name: str,
        also: Check | None = None,
        properties: dict[str, Callable[[Plain], Any]] | None = None,
        /,
        **fields: Field,
    ) -> None:
        self.name = name
        self.fields = fields
        self.also = also
        self.properties = properties or {}
        self.by_key: dict[str, Field] = {}
        for field_name, field in fields.items():
            field.name = field_name
            field.key = field.key or field_name
            self.by_key[field.key] = field
        self._checks = [(f.key, f.check, f.required) for f in fields.values()]
        # a field's name as a key beside its alias (``from_``): the model may read either
        self._names = frozenset(f.name for f in fields.values() if f.key != f.name)

    def accepts(self, raw: Any) -> bool:
        """Whether `raw` is plainly what the model takes unchanged (see the module docstring)."""
        if type(raw) is not dict or (self._names and not self._names.isdisjoint(raw)):
            return False
        get = raw.get
        for key, check, required in self._checks:
            value = get(key, _REQUIRED)
            if value is _REQUIRED:
                if required:
                    return False
            elif not check(value):
                return False
        return self.also is None or self.also(raw)

    def with_rules(
        self, also: Check | None, properties: dict[str, Callable[[Plain], Any]] | None = None
    ) -> Shape:
        """This shape with a check of the whole record and the properties a reader asks for:
        what a model adds to its fields (a generated shape has the fields alone)."""
        return Shape(self.name, also, properties, **self.fields)

    def read(self, raw: Any) -> Plain | None:
        """`raw` as a `Plain` record, or None when the model is to judge it."""
        return Plain(self, raw) if self.accepts(raw) else None

    def read_all(self, items: Iterable[Any]) -> list[Plain] | None:
        """Every item as a `Plain`, or None when one of them is not plain."""
        accepts = self.accepts
        listed = list(items)
        if not all(map(accepts, listed)):
            return None
        return [Plain(self, raw) for raw in listed]


class Plain:
    """A record read by its `Shape`: the fields as attributes, the JSON as `to_json_dict` gives it.
    Read only: it is what the file held a moment ago, like a model read from it."""

    __slots__ = ("_raw", "_record", "_shape")

    def __init__(self, shape: Shape, raw: dict[str, Any], record: bool = True) -> None:
        self._shape = shape
        self._raw = raw
        # a `Record` read from its JSON keeps its key order; a nested record (validated inside
        # its parent) or a message is dumped as pydantic dumps a model
        self._record = record

    def __getattr__(self, name: str) -> Any:
        shape = self._shape
        field = shape.fields.get(name)
        if field is not None:
            value = self._raw.get(field.key, _REQUIRED)  # (the common case inline: a look at
            if field.shape is None and value is not _REQUIRED:  # 200 members asks ~5,000 times)
                return value
            return self._value(field)
        if name in shape.properties:
            return shape.properties[name](self)
        raise AttributeError(f"{shape.name} has no field {name!r}")

    def __repr__(self) -> str:
        return f"Plain({self._shape.name}, {self._raw!r})"

    def _value(self, field: Field) -> Any:
        raw = self._raw
        if field.key not in raw:
            return field.missing()
        value = raw[field.key]
        if field.shape is None or value is None:
            return value
        if field.many:
            return [Plain(field.shape, item, field.record) for item in value]
        return Plain(field.shape, value, field.record)

    @property
    def raw(self) -> dict[str, Any]:
        """The JSON object it was read from (not a copy: do not change it)."""
        return self._raw

    def to_json_dict(self) -> dict[str, Any]:
        """`Record.to_json_dict`: the keys in the file's order (explicit nulls kept), then the
        missing fields that have a value, in the model's order; a nested record as `_dumped`."""
        if not self._record:
            return self._dumped(by_alias=True, exclude_none=True)
        fields = self._shape.by_key
        ordered: dict[str, Any] = {}
        for key, value in self._raw.items():
            field = fields.get(key)
            ordered[key] = value if field is None else _json_of(field, value, self)
        for field in self._shape.fields.values():
            if field.key not in ordered:
                value = field.missing()
                if value is not None:
                    ordered[field.key] = _json_of(field, value, self)
        return ordered

    def model_dump(self) -> dict[str, Any]:
        """pydantic's ``model_dump()``: every field by name, in the model's order, then the
        unknown keys."""
        return self._dumped(by_alias=False, exclude_none=False)

    def _dumped(self, by_alias: bool, exclude_none: bool) -> dict[str, Any]:
        dumped: dict[str, Any] = {}
        for field in self._shape.fields.values():
            value = self._value(field)
            if value is None and exclude_none:
                continue
            if isinstance(value, Plain):
                value = value._dumped(by_alias, exclude_none)
            elif field.many and value is not None:
                value = [item._dumped(by_alias, exclude_none) for item in value]
            dumped[field.key if by_alias else field.name] = value
        for key, value in self._raw.items():
            if key not in self._shape.by_key and not (value is None and exclude_none):
                dumped[key] = value
        return dumped


def _json_of(field: Field, value: Any, record: Plain) -> Any:
    """A field's value as `to_json_dict` writes it: a nested record dumped, others as they are."""
    if field.shape is None or value is None:
        return value
    nested = record._value(field)
    if field.many:
        return [item.to_json_dict() for item in nested]
    return nested.to_json_dict()


OPT_STR = optional(STR)
OPT_INT = optional(INT)
OPT_BOOL = optional(BOOL)
USAGE = dict_of(INT)
