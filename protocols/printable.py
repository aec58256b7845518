"""Text safe to show a person in a terminal, and JSON safe to print.

Everything under the config root may have been written by a hostile process, so text read from
it (names, messages, commands, task subjects, transcripts) must not be able to move the cursor,
erase a line, change colours, reorder what is shown, or hide characters when it is printed.
`printable` replaces every such character with a visible escape, in Python's own spelling:

- C0 controls (U+0000-U+001F) except newline and tab, DEL (U+007F) and C1 controls
  (U+0080-U+009F): ``\\r``, ``\\x1b``, ``\\x00``, ``\\x9b``; with ``newlines=False``
  (`printable_line`, for one-line fields) newline and tab too, as ``\\n`` and ``\\t``;
- bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), which reorder
  what a terminal shows: ``\\u202e``;
- invisible characters that hide or split text: the line and paragraph separators U+2028 and
  U+2029 (some terminals and editors break lines there), the zero-width space U+200B, the word
  joiner U+2060, the deprecated format controls U+206A-U+206F and U+FEFF (zero-width no-break
  space, a byte-order mark). The zero-width joiner and non-joiner (U+200C, U+200D) are left
  alone: emoji sequences and Persian and Indic scripts need them, and they hide nothing;
- lone UTF-16 surrogates (U+D800-U+DFFF), which ``json.loads`` makes of ``"\\ud800"`` and on
  which writing to a UTF-8 terminal raises `UnicodeEncodeError`: ``\\ud800``.

Everything else, ordinary letters of any script, CJK and emoji included, passes unchanged. A
backslash is left alone too: a literal ``\\r`` in a command then reads like an escaped carriage
return, but either way the person sees every character that is there and nothing is hidden;
doubling backslashes instead would make ordinary commands (``printf 'a\\n'``, ``grep 'a\\|b'``,
Windows paths) read as something they are not. The output of `printable` contains none of the
characters it escapes, so applying it twice changes nothing.

`printable_json` is `json.dumps` with ``ensure_ascii=False`` except that the same characters are
written as ``\\uXXXX`` escapes (``json.dumps`` already escapes C0 controls, but writes C1, bidi
and the rest raw, and a lone surrogate makes the write fail); the result is valid JSON that
loads back to the same values. This module uses only the standard library.
"""

from __future__ import annotations

import json
import re
from typing import Any

_UNSAFE = (
    "\x00-\x08\x0b-\x1f"  # C0 controls but tab (U+0009) and newline (U+000A)
    "\x7f-\x9f"  # DEL, C1 controls
    "\u061c\u200b\u200e\u200f"  # Arabic letter mark, zero-width space, LRM, RLM
    "\u2028-\u202e"  # line and paragraph separators, LRE RLE PDF LRO RLO
    "\u2060\u2066-\u206f"  # word joiner, LRI RLI FSI PDI, deprecated format controls
    "\ufeff"  # zero-width no-break space (byte-order mark)
    "\ud800-\udfff"  # lone surrogates
)
_UNSAFE_TEXT = re.compile(f"[{_UNSAFE}]")
_UNSAFE_LINE = re.compile(f"[\t\n{_UNSAFE}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def printable(text: str, *, newlines: bool = True) -> str:
    """`text` with every character that could change or hide what a terminal shows replaced by
    a visible escape (see the module docstring); newline and tab are kept unless `newlines` is
    false."""
    return (_UNSAFE_TEXT if newlines else _UNSAFE_LINE).sub(_escape, text)


def printable_line(text: str) -> str:
    """`printable` for a one-line field: newline and tab are escaped too (``\\n``, ``\\t``)."""
    return _UNSAFE_LINE.sub(_escape, text)


def printable_lines(lines: list[str]) -> list[str]:
    """`printable_line` of each of `lines` (the same list when none needs escaping: one scan
    of them all, since every character escaped is escaped on its own)."""
    if _UNSAFE_LINE.search("".join(lines)) is None:
        return lines
    return [printable_line(line) for line in lines]


def printable_json_text(text: str) -> str:
    """JSON text (one document, or one line of a JSON-lines file) with every unsafe character
    written as a ``\\uXXXX`` escape; raw newlines and tabs, whitespace between tokens, stay.
    Valid JSON stays valid and loads to the same values."""
    return _UNSAFE_TEXT.sub(_json_escape, text)


def printable_json(value: Any, *, indent: int | None = None) -> str:
    """``json.dumps(value, ensure_ascii=False, indent=indent)`` safe to print: readable letters
    of every script, but no control, bidi, invisible or lone surrogate character raw."""
    return printable_json_text(json.dumps(value, ensure_ascii=False, indent=indent))
