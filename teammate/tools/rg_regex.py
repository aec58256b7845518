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
from dataclasses import dataclass, field, replace

from protocols.errors import Error
from teammate.tools.rg_classes import (
    ClassParser,
    category,
    category_ranges,
    range_text,
    without_newline,
)

LINE_FLAGS = re.MULTILINE
_PUNCTUATION = frozenset("\\.+*?()|[]{}^$#&-~ !\"%',/:;<=>@_`")
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
        name = category(found.group(2))
        if name is None:
            raise RegexDialectError(
                f"\\p{{{found.group(2)}}}: the Python engine knows Unicode general categories "
                "(such as L, Lu, Nd, P) but not scripts or other properties; use a character "
                "range instead"
            )
        ranges = category_ranges(name)
        if not self.multiline:
            ranges = without_newline(ranges)
        body = "".join(range_text(low, high) for low, high in ranges)
        if not negated:
            return body if inside_class else f"[{body}]"
        other = "(?s:.)" if self.multiline else "[^\\n]"
        return f"(?:(?![{body}]){other})"

    # --- character classes ---

    def char_class(self) -> None:
        parsed = ClassParser(self).parse()
        self.emit_atom(parsed)
