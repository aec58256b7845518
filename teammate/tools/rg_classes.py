"""Character classes of ripgrep's regex dialect as Python pattern text (`teammate.tools.rg_regex`):
bracketed classes (nested ones, ``[[:alpha:]]`` POSIX classes, the operators ``&&``, ``--`` and
``~~``, written with look-aheads) and the code points of Unicode general categories (``\\p{Lu}``),
expanded from `unicodedata` once."""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from typing import Any, Protocol

POSIX = {  # [[:name:]]: ASCII classes
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\x0b\\x0c\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
CATEGORY_NAMES = {  # \p{long name}: its general category
    "letter": "L", "casedletter": "LC", "uppercaseletter": "Lu", "lowercaseletter": "Ll",
    "titlecaseletter": "Lt", "modifierletter": "Lm", "otherletter": "Lo", "mark": "M",
    "combiningmark": "M", "nonspacingmark": "Mn", "spacingmark": "Mc", "enclosingmark": "Me",
    "number": "N", "decimalnumber": "Nd", "digit": "Nd", "letternumber": "Nl",
    "othernumber": "No", "punctuation": "P", "connectorpunctuation": "Pc",
    "dashpunctuation": "Pd", "openpunctuation": "Ps", "closepunctuation": "Pe",
    "initialpunctuation": "Pi", "finalpunctuation": "Pf", "otherpunctuation": "Po",
    "symbol": "S", "mathsymbol": "Sm", "currencysymbol": "Sc", "modifiersymbol": "Sk",
    "othersymbol": "So", "separator": "Z", "spaceseparator": "Zs", "lineseparator": "Zl",
    "paragraphseparator": "Zp", "other": "C", "control": "Cc", "format": "Cf",
    "surrogate": "Cs", "privateuse": "Co", "unassigned": "Cn",
}  # fmt: skip


class Cursor(Protocol):
    """What a `ClassParser` reads through: the translator's pattern and position in it."""

    pattern: str
    at: int
    multiline: bool

    @property
    def state(self) -> Any: ...  # its flags in force: `verbose` is read here

    def fail(self, message: str) -> Exception: ...

    def escaped_atom(self, *, inside_class: bool) -> str: ...

    def literal_newline(self) -> None: ...


def category(name: str) -> str | None:
    """The general category `name` names (``Lu``, ``L``, ``LC``, ``Any``; long names and
    ``gc=`` forms too), or None: not a general category (a script, another property)."""
    key = re.sub(r"[\s_-]", "", name).lower()
    for prefix in ("gc=", "generalcategory="):
        key = key.removeprefix(prefix)
    short = {code.lower(): code for code in CATEGORY_NAMES.values()}
    if key in short:
        return short[key]
    if key in CATEGORY_NAMES:
        return CATEGORY_NAMES[key]
    if key == "any":
        return "Any"
    return None


@cache
def _all_categories() -> dict[str, list[tuple[int, int]]]:
    """Each general category's code points as ranges (one pass over Unicode, made once)."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for point in range(0x110000):
        category = unicodedata.category(chr(point))
        spans = ranges.setdefault(category, [])
        if spans and spans[-1][1] == point - 1:
            spans[-1] = (spans[-1][0], point)
        else:
            spans.append((point, point))
    return ranges


@cache
def category_ranges(category: str) -> tuple[tuple[int, int], ...]:
    """The code points of a general category (``Lu``), a major class (``L``), ``LC`` or
    ``Any``, as sorted ranges."""
    if category == "Any":
        return ((0, 0x10FFFF),)
    table = _all_categories()
    members = {"LC": ("Lu", "Ll", "Lt")}.get(category) or tuple(
        name for name in table if name == category or (len(category) == 1 and name[0] == category)
    )
    return tuple(sorted(span for name in members for span in table.get(name, [])))


def without_newline(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    kept: list[tuple[int, int]] = []
    for low, high in ranges:
        if low <= 10 <= high:
            kept.extend(span for span in ((low, 9), (11, high)) if span[0] <= span[1])
        else:
            kept.append((low, high))
    return tuple(kept)


def range_text(low: int, high: int) -> str:
    return f"\\U{low:08x}" if low == high else f"\\U{low:08x}-\\U{high:08x}"


class ClassParser:
    """A bracketed class at the translator's cursor, as a Python expression matching one
    character: a plain ``[...]`` where it can be, look-aheads for nested classes and the
    operators ``&&``, ``--`` and ``~~``."""

    def __init__(self, owner: Cursor) -> None:
        self.owner = owner
        self.pattern = owner.pattern

    def parse(self) -> str:
        return self.bracket()

    def bracket(self) -> str:
        """The class starting at ``[`` (the cursor), up to its ``]``."""
        owner = self.owner
        owner.at += 1
        negated = self.pattern.startswith("^", owner.at)
        owner.at += negated
        operands: list[list[str]] = [[]]
        operators: list[str] = []
        first = True
        while True:
            if owner.at >= len(self.pattern):
                raise owner.fail("unclosed character class")
            char = self.pattern[owner.at]
            if char == "]" and not first:
                owner.at += 1
                break
            operator = self.pattern[owner.at : owner.at + 2]
            if operator in ("&&", "--", "~~") and not first:
                owner.at += 2
                operators.append(operator)
                operands.append([])
                continue
            operands[-1].append(self.item(first))
            first = False
        return self.combine(operands, operators, negated)

    def item(self, first: bool) -> str:
        """One member: a nested class, a POSIX class, an escape, a character or a range; as
        class text (bare) or as an expression (in parentheses)."""
        owner = self.owner
        if owner.state.verbose:
            while owner.at < len(self.pattern) and self.pattern[owner.at].isspace():
                owner.at += 1
        posix = re.match(r"\[:(\^?)([a-z]+):\]", self.pattern[owner.at :])
        if posix:
            owner.at += posix.end()
            if posix.group(2) not in POSIX:
                raise owner.fail(f"unknown POSIX class {posix.group(2)}")
            body = POSIX[posix.group(2)]
            return f"([^{body}])" if posix.group(1) else body
        if self.pattern.startswith("[", owner.at):
            return "(" + self.bracket() + ")"
        low = self.member()
        if (
            self.pattern.startswith("-", owner.at)
            and owner.at + 1 < len(self.pattern)
            and self.pattern[owner.at + 1] != "]"
            and not low.startswith(("(", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S"))
        ):
            owner.at += 1
            high = self.member()
            self.check_range(low, high)
            return f"{low}-{high}"
        return low

    def member(self) -> str:
        owner = self.owner
        char = self.pattern[owner.at]
        if char == "\\":
            if owner.at + 1 >= len(self.pattern):
                raise owner.fail("incomplete escape sequence")
            text = owner.escaped_atom(inside_class=True)
            return f"({text})" if text.startswith("(") else text
        owner.at += 1
        if char == "\n":
            owner.literal_newline()
        return re.escape(char) if not char.isalnum() else char

    def check_range(self, low: str, high: str) -> None:
        try:
            re.compile(f"[{low}-{high}]")
        except re.error:
            raise self.owner.fail("invalid character class range") from None

    def combine(self, operands: list[list[str]], operators: list[str], negated: bool) -> str:
        expressions = [self.union(items) for items in operands]
        result = expressions[0]
        for operator, right in zip(operators, expressions[1:], strict=True):
            if operator == "&&":
                result = f"(?:(?={result}){right})"
            elif operator == "--":
                result = f"(?:(?!{right}){result})"
            else:
                result = f"(?:(?!{right}){result}|(?!{result}){right})"
        any_char = "(?s:.)" if self.owner.multiline else "[^\\n]"
        if negated:
            if result.startswith("[") and result.endswith("]") and not result.startswith("[^"):
                return "[^" + result[1:-1] + ("" if self.owner.multiline else "\\n") + "]"
            return f"(?:(?!{result}){any_char})"
        return result

    def union(self, items: list[str]) -> str:
        """Members as one expression: ``[...]`` for the bare ones, alternatives for the rest;
        outside multiline mode, never a newline."""
        bare = "".join(item for item in items if not item.startswith("("))
        nested = [item[1:-1] for item in items if item.startswith("(")]
        parts = ([f"[{bare}]"] if bare else []) + nested
        if not parts:
            raise self.owner.fail("empty character class")
        text = parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"
        if not self.owner.multiline and re.fullmatch(text, "\n", re.MULTILINE):
            text = f"(?:(?!\\n){text})"
        return text
