"""Ripgrep's regex dialect (Rust's `regex` crate) written as a Python `re` pattern, for the
pure-Python engine of the `Grep` tool (`teammate.tools.scan`).

This module owns the translation and its refusals. What ripgrep accepts and Python reads the
same way passes through; what differs is rewritten:

* inline flags anywhere (``a(?i)b``: to the end of the group) become scoped groups; ``(?U)``
  (lazy by default) swaps the quantifiers' greed; ``(?x)`` is read here; ``(?s)`` is ours;
* ``(?<name>...)`` is ``(?P<name>...)``; ``\\z`` is ``\\Z``; ``\\<``, ``\\>``, ``\\b{start}``
  and ``\\b{end}`` are word-boundary assertions; ``\\x{...}``, ``\\u{...}`` code points;
* ``\\p{..}``/``\\P{..}`` Unicode general categories are expanded from `unicodedata` (scripts
  such as ``\\p{Greek}`` are refused); ``[[:alpha:]]`` ASCII classes, nested classes and the
  class operators ``&&``, ``--``, ``~~`` are written with look-aheads.

Like ripgrep, the translation refuses look-around, backreferences, atomic groups, ``(?#...)``,
unescaped literal braces that are no repetition (``interface{}``) and, outside multiline mode, a
pattern that names a newline. Outside multiline mode no part of a pattern can match a newline
(``\\s`` and ``[^a]`` leave it out, as ripgrep's line-by-line search does), so a search of a
whole block of lines finds what a search of each line would. ``\\A`` and ``\\z`` are the line's
start and end there, as in ripgrep. A multiline pattern that cannot match a newline is searched
line by line, as ripgrep does (it decides which of its counts ``-c`` reports).

Differences kept: Python's Unicode tables (``\\w``, case folding, categories) are its own
version's; ``(?R)`` (CRLF mode) and ``(?-u)`` are refused.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace
from functools import cache

from protocols.errors import Error

LINE_FLAGS = re.MULTILINE
_PUNCTUATION = frozenset("\\.+*?()|[]{}^$#&-~ !\"%',/:;<=>@_`")
_POSIX = {
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
_CATEGORY_NAMES = {
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
_WORD_BOUNDARIES = {
    "start": r"\b(?=\w)",
    "end": r"\b(?<=\w)",
    "start-half": r"(?<!\w)",
    "end-half": r"(?!\w)",
}


class RegexDialectError(Error):
    """A pattern ripgrep refuses, or one the Python engine cannot search the way ripgrep does."""


@dataclass(frozen=True)
class Translation:
    """A ripgrep pattern as Python's: its source and flags, and whether it is searched across
    lines (multiline asked for and the pattern can match a newline)."""

    source: str
    flags: int
    multiline: bool

    def compile(self) -> re.Pattern[str]:
        return re.compile(self.source, self.flags)


def translate(pattern: str, *, ignore_case: bool = False, multiline: bool = False) -> Translation:
    """`pattern` in ripgrep's dialect as a Python pattern; `RegexDialectError` says why not."""
    flags = LINE_FLAGS | (re.IGNORECASE if ignore_case else 0)
    if multiline:
        spanning = _Translator(pattern, multiline=True).run()
        if spanning.newline:
            return Translation(spanning.text, flags, True)
    return Translation(_Translator(pattern, multiline=False).run().text, flags, False)


@dataclass
class _State:
    """The flags in force: the ones Python applies (``i``, ``m``) and ours."""

    dotall: bool
    verbose: bool = False
    lazy: bool = False
    python: str = ""  # the scoped-flag text re-opened after a `|`


@dataclass
class _Frame:
    state: _State
    closes: int = 0  # scoped-flag groups opened by `(?flags)` in this group, closed at its end
    reopen: list[str] = field(default_factory=list)


@dataclass
class _Output:
    text: str
    newline: bool  # some part of the pattern can match a newline


class _Translator:
    """One pass over a pattern, writing the Python pattern as it goes."""

    def __init__(self, pattern: str, *, multiline: bool) -> None:
        self.pattern = pattern
        self.multiline = multiline
        self.at = 0
        self.out: list[str] = []
        self.newline = False
        self.frames = [_Frame(_State(dotall=multiline))]

    @property
    def state(self) -> _State:
        return self.frames[-1].state

    def fail(self, why: str) -> RegexDialectError:
        return RegexDialectError(f"{why} (at position {self.at})")

    def run(self) -> _Output:
        while self.at < len(self.pattern):
            self.step()
        if len(self.frames) > 1:
            raise self.fail("unclosed group")
        self.out.append(")" * self.frames[0].closes)
        return _Output("".join(self.out), self.newline)

    def step(self) -> None:
        char = self.pattern[self.at]
        if self.state.verbose and self.skip_verbose(char):
            return
        handler = {
            "\\": self.escape,
            "(": self.group,
            ")": self.close_group,
            "|": self.alternate,
            "[": self.char_class,
            ".": self.dot,
            "{": self.counted,
            "*": self.quantifier,
            "+": self.quantifier,
            "?": self.quantifier,
        }.get(char)
        if handler is not None:
            handler()
            return
        self.at += 1
        if char == "\n":
            self.literal_newline()
        self.out.append(re.escape(char) if char in "#&~- " else char)

    def skip_verbose(self, char: str) -> bool:
        if char.isspace():
            self.at += 1
            return True
        if char == "#":
            end = self.pattern.find("\n", self.at)
            self.at = len(self.pattern) if end < 0 else end + 1
            return True
        return False

    def literal_newline(self) -> None:
        if not self.multiline:
            raise RegexDialectError(
                "the literal '\\n' is not allowed in a regex outside multiline mode; "
                "use multiline: true to match across lines"
            )
        self.newline = True

    def emit_atom(self, text: str) -> None:
        """`text`, one character's worth of pattern; notes whether it can match a newline."""
        if self.multiline and not self.newline:
            self.newline = re.fullmatch(text, "\n", LINE_FLAGS) is not None
        self.out.append(text)

    # --- groups and flags ---

    def group(self) -> None:
        rest = self.pattern[self.at + 1 :]
        if not rest.startswith("?"):
            self.open("(", 1)
            return
        for prefix, why in (
            ("?=", "look-around, including look-ahead and look-behind, is not supported"),
            ("?!", "look-around, including look-ahead and look-behind, is not supported"),
            ("?<=", "look-around, including look-ahead and look-behind, is not supported"),
            ("?<!", "look-around, including look-ahead and look-behind, is not supported"),
            ("?P=", "backreferences are not supported"),
            ("?P>", "recursion is not supported"),
            ("?>", "atomic groups are not supported (unrecognized flag)"),
            ("?#", "comments (?#...) are not supported (unrecognized flag)"),
            ("?(", "conditionals are not supported (unrecognized flag)"),
        ):
            if rest.startswith(prefix):
                raise self.fail(why)
        named = re.match(r"\?P?<([A-Za-z_][A-Za-z0-9_.\[\]]*)>", rest)
        if named:
            self.open(f"(?P<{named.group(1)}>", named.end() + 1)
        elif rest.startswith("?:"):
            self.open("(?:", 3)
        else:
            self.flags(rest)

    def open(self, text: str, length: int) -> None:
        self.at += length
        self.out.append(text)
        self.frames.append(_Frame(replace(self.state)))

    def close_group(self) -> None:
        if len(self.frames) == 1:
            raise self.fail("unopened group")
        frame = self.frames.pop()
        self.out.append(")" * frame.closes + ")")
        self.at += 1

    def alternate(self) -> None:
        frame = self.frames[-1]
        self.out.append(")" * frame.closes + "|" + "".join(frame.reopen))
        self.at += 1

    def flags(self, rest: str) -> None:
        spec = re.match(r"\?([A-Za-z-]*)([:)])", rest)
        if spec is None:
            raise self.fail("unrecognized flag")
        state = replace(self.state)
        python = self.apply_flags(spec.group(1), state)
        opener = f"(?{python}:" if python else "(?:"
        self.at += spec.end() + 1
        if spec.group(2) == ":":
            self.out.append(opener)
            self.frames.append(_Frame(state))
            return
        frame = self.frames[-1]
        frame.state = state
        self.out.append(opener)
        frame.closes += 1
        frame.reopen.append(opener)

    def apply_flags(self, letters: str, state: _State) -> str:
        """Sets our flags in `state`; the scoped-flag text for Python's (``i``, ``m``)."""
        on, _, off = letters.partition("-")
        if not letters or "-" in off:
            raise self.fail("unrecognized flag")
        python = {True: "", False: ""}
        for letter, value in [(char, True) for char in on] + [(char, False) for char in off]:
            if letter in "im":
                python[value] += letter
            elif letter == "s":
                state.dotall = value and self.multiline
            elif letter == "x":
                state.verbose = value
            elif letter == "U":
                state.lazy = value
            elif not (letter == "u" and value):
                raise self.fail(f"the flag {letter!r} is not supported by the Python engine")
        return python[True] + (f"-{python[False]}" if python[False] else "")

    # --- atoms ---

    def dot(self) -> None:
        self.at += 1
        self.emit_atom("(?s:.)" if self.state.dotall else "[^\\n]")

    def quantifier(self) -> None:
        self.out.append(self.pattern[self.at])
        self.at += 1
        self.greed()

    def counted(self) -> None:
        found = re.match(r"\{(\d+)(,(\d*))?\}", self.pattern[self.at :])
        if found is None:
            raise self.fail(
                "a literal brace must be escaped (\\{): ripgrep reads { as the start of a "
                "counted repetition such as {2} or {2,5}"
            )
        self.out.append(found.group(0))
        self.at += found.end()
        self.greed()

    def greed(self) -> None:
        lazy = self.pattern.startswith("?", self.at)
        if lazy:
            self.at += 1
        if self.pattern.startswith("+", self.at):
            raise self.fail("a repetition of a repetition (such as *+) is not supported")
        if lazy != self.state.lazy:
            self.out.append("?")

    def escape(self) -> None:
        if self.at + 1 >= len(self.pattern):
            raise self.fail("incomplete escape sequence")
        letter = self.pattern[self.at + 1]
        text = self.assertion(letter)
        if text is not None:
            self.out.append(text)
            return
        self.emit_atom(self.escaped_atom(inside_class=False))

    def assertion(self, letter: str) -> str | None:
        """The Python text of a zero-width escape at the cursor (moving past it), or None."""
        if letter == "b" and self.pattern.startswith("{", self.at + 2):
            close = self.pattern.find("}", self.at)
            name = self.pattern[self.at + 3 : close]
            if close < 0 or name not in _WORD_BOUNDARIES:
                raise self.fail("unrecognized word boundary assertion")
            self.at = close + 1
            return _WORD_BOUNDARIES[name]
        table = {
            "b": r"\b",
            "B": r"\B",
            "<": _WORD_BOUNDARIES["start"],
            ">": _WORD_BOUNDARIES["end"],
            "A": r"\A" if self.multiline else "(?m:^)",
            "z": r"\Z" if self.multiline else "(?m:$)",
        }
        if letter not in table:
            return None
        self.at += 2
        return table[letter]

    def escaped_atom(self, *, inside_class: bool) -> str:
        """The escape at the cursor as Python text matching one character (moving past it)."""
        letter = self.pattern[self.at + 1]
        self.at += 2
        if letter in "dwsDWS":
            return self.perl_class(letter, inside_class)
        if letter in "pP":
            return self.unicode_class(letter == "P", inside_class)
        if letter in "xuU":
            return self.code_point(letter)
        if letter == "n":
            self.literal_newline()
            return "\\n"
        if letter in "tfrva":
            return "\\" + letter
        if letter.isdigit():
            raise self.fail("backreferences are not supported")
        if letter in _PUNCTUATION or not letter.isascii():
            return re.escape(letter)
        raise self.fail(f"unrecognized escape sequence \\{letter}")

    def perl_class(self, letter: str, inside_class: bool) -> str:
        if self.multiline or inside_class or letter in "dwS":
            return "\\" + letter  # in a class, the class leaves the newline out as a whole
        return f"[^\\{letter.swapcase()}\\n]"  # \s, \D, \W without the newline

    def code_point(self, letter: str) -> str:
        digits = {"x": 2, "u": 4, "U": 8}[letter]
        rest = self.pattern[self.at :]
        found = re.match(r"\{([0-9A-Fa-f]{1,8})\}", rest) or re.match(
            f"[0-9A-Fa-f]{{{digits}}}", rest
        )
        if found is None:
            raise self.fail(f"invalid \\{letter} escape")
        self.at += found.end()
        value = int(found.group(1) if found.lastindex else found.group(0), 16)
        if value > 0x10FFFF:
            raise self.fail("code point out of range")
        if value == 10:
            self.literal_newline()
        return f"\\U{value:08x}"

    def unicode_class(self, negated: bool, inside_class: bool) -> str:
        rest = self.pattern[self.at :]
        found = re.match(r"\{(\^?)([^}]*)\}", rest) or re.match(r"()([A-Za-z])", rest)
        if found is None:
            raise self.fail("invalid Unicode class")
        self.at += found.end()
        negated ^= found.group(1) == "^"
        ranges = category_ranges(_category(found.group(2)))
        if not self.multiline:
            ranges = _without_newline(ranges)
        body = "".join(_range_text(low, high) for low, high in ranges)
        if not negated:
            return body if inside_class else f"[{body}]"
        other = "(?s:.)" if self.multiline else "[^\\n]"
        return f"(?:(?![{body}]){other})"

    # --- character classes ---

    def char_class(self) -> None:
        parsed = _ClassParser(self).parse()
        self.emit_atom(parsed)


def _category(name: str) -> str:
    key = re.sub(r"[\s_-]", "", name).lower()
    for prefix in ("gc=", "generalcategory="):
        key = key.removeprefix(prefix)
    short = {code.lower(): code for code in _CATEGORY_NAMES.values()}
    if key in short:
        return short[key]
    if key in _CATEGORY_NAMES:
        return _CATEGORY_NAMES[key]
    if key == "any":
        return "Any"
    raise RegexDialectError(
        f"\\p{{{name}}}: the Python engine knows Unicode general categories (such as L, Lu, "
        "Nd, P) but not scripts or other properties; use a character range instead"
    )


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


def _without_newline(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    kept: list[tuple[int, int]] = []
    for low, high in ranges:
        if low <= 10 <= high:
            kept.extend(span for span in ((low, 9), (11, high)) if span[0] <= span[1])
        else:
            kept.append((low, high))
    return tuple(kept)


def _range_text(low: int, high: int) -> str:
    return f"\\U{low:08x}" if low == high else f"\\U{low:08x}-\\U{high:08x}"


class _ClassParser:
    """A bracketed class at the translator's cursor, as a Python expression matching one
    character: a plain ``[...]`` where it can be, look-aheads for nested classes and the
    operators ``&&``, ``--`` and ``~~``."""

    def __init__(self, owner: _Translator) -> None:
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
            if posix.group(2) not in _POSIX:
                raise owner.fail(f"unknown POSIX class {posix.group(2)}")
            body = _POSIX[posix.group(2)]
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
        if not self.owner.multiline and re.fullmatch(text, "\n", LINE_FLAGS):
            text = f"(?:(?!\\n){text})"
        return text
