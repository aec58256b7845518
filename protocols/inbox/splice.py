"""Appending to an inbox without parsing it.

A commit that only appends (no read marks to set, nothing to compact) needs three answers
about the live inbox: is it whole, does it hold this message already, how many of its entries
are read. Parsing the whole file for them made every append cost as much as the inbox is long:
200 teammates answering a broadcast each parsed the lead's inbox, 400 entries long by the end.
In the format every writer of an inbox uses (``JSON.stringify(entries, null, 2)``, swarm's
`dumps_pretty` byte for byte) the text answers them:

- **Whole**: ``[]``, or ``[\\n  {`` ... ``\\n  }\\n]``. A raw newline never stands inside a JSON
  string (it is written ``\\n``), and an entry's own nested values are indented deeper, so a file
  cut short (a writer killed part way through an in-place write) cannot end like that.
- **Holds a message**: a line ``    "msg_id": "<id>"`` is in it. A quote inside a string is
  written ``\\"`` and a newline ``\\n``, so that text stands only where an entry's own key is
  (indented four spaces: a key of an entry's nested value is indented deeper). Only ids made of
  characters JSON writes as they are (`SAFE_ID`) are looked up so.
- **Read entries**: the lines ``    "read": true`` in it, by the same reasoning.

The text is taken as the inbox only when it is what the last swarm commit wrote or checked by
parsing it: that commit leaves the text's `digest` (its length and CRC-32) in the lock's flock
file (`FileGuard.set_note`), and the next one compares. A file written since by anyone else
(Claude Code, a person, a hostile process) is parsed first, so one that does not parse is
moved aside before anything is added to it, as it always was.

The record (``<agent>.archive.jsonl``, compact JSON, one message a line) is asked the same way,
in its last `TAIL_BYTES`: a message committed and compacted away there (its spooled copy or a
retry comes after) is known by ``"msg_id":"<id>"``. Anything else takes the parsing path.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,200}")
EMPTY = "[]"
HEAD = "[\n  {"
END = "\n  }\n]"
READ = '\n    "read": true'
TAIL_BYTES = 64 * 1024  # the record's tail a repeat is looked for in: a few hundred messages


def digest(data: bytes) -> bytes:
    """What identifies an inbox's bytes to the next commit: their length and CRC-32."""
    return b"inbox %d %08x" % (len(data), zlib.crc32(data))


def whole(text: str) -> bool:
    """Whether `text` is an inbox as its writers write it, whole (module doc)."""
    return text == EMPTY or (text.startswith(HEAD) and text.endswith(END))


def msg_id(item: dict[str, Any]) -> str | None:
    """The entry's ``msg_id`` if it is one the text can be searched for, else None."""
    given = item.get("msg_id")
    return given if isinstance(given, str) and SAFE_ID.fullmatch(given) else None


def holds(text: str, message_id: str) -> bool:
    """Whether the inbox `text` has an entry with this ``msg_id`` (a `SAFE_ID`)."""
    return f'\n    "msg_id": "{message_id}"' in text


def recorded(tail: bytes, message_id: str) -> bool:
    """Whether the record's `tail` has a line with this ``msg_id`` (a `SAFE_ID`)."""
    return f'"msg_id":"{message_id}"'.encode("ascii") in tail


def read_entries(text: str) -> int:
    """How many entries of the inbox `text` are read (module doc)."""
    return text.count(READ)


def appended(text: str, rendered: list[str]) -> str:
    """The whole inbox `text` with the entries `rendered` (each as `dumps_pretty(item,
    level=1)` writes it) added at its end."""
    added = ",\n  ".join(rendered)
    if text == EMPTY:
        return "[\n  " + added + "\n]"
    return text[:-2] + ",\n  " + added + "\n]"
