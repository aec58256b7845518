"""Python's cycle collector in swarm's processes: kept out of the way of big imports and of exit.

A teammate that thinks with Claude imports the `anthropic` SDK: ~3,400 modules and ~1,500
pydantic classes, about a million objects that live as long as the process. Left alone, the
collector walks them again and again while they load, and then on every full pass of the
teammate's life; and at exit the interpreter makes one last pass over everything still alive,
which for such a process costs a third of what the import did. So:

- `import_frozen` imports a module with the collector paused, then freezes what exists (moves it
  out of the collector's sight, `gc.freeze`): loaded once, never walked again;
- `no_last_collection` skips the last pass at exit: the process's end frees the memory all the
  same, and Python does not promise to finalize what is still alive at exit anyway;
- `collection_paused` pauses it over a stretch that makes many objects and no cycles.

docs/perf-log.md ("The test suite") has what each saves."""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import importlib
from collections.abc import Iterator
from types import ModuleType


@functools.cache
def no_last_collection() -> None:
    """At exit, skip the collector's last pass over every object still alive. Once per
    process; it runs after every other exit handler registered later (`atexit` runs them
    last-in, first-out, and this one is registered first)."""
    atexit.register(gc.freeze)


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """No collection while the block runs; the collector is as it was after (a process that
    had turned it off keeps it off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def import_frozen(name: str) -> ModuleType:
    """`importlib.import_module(name)` with the collector paused, then everything alive frozen,
    so that later passes never walk the module's objects again. Import errors propagate."""
    with collection_paused():
        module = importlib.import_module(name)
        gc.freeze()
    return module
