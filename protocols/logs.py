"""A module's logger, made when it first logs: ``log = logger(__name__)``.

The modules a look at a team imports (``swarm status``: jsonio, locks, inbox, mailbox, tasks,
team...) log only when something is wrong, and `logging` with what it imports (traceback,
textwrap, string) costs ~3.5 ms to load; a logger made on first use keeps a look that finds
nothing wrong from paying for it. It is the `logging.Logger` of that name in every respect
once made (levels, handlers, pytest's caplog)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import logging


class _Logger:
    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: logging.Logger | None = None

    def __getattr__(self, attribute: str) -> Any:
        made = self._logger
        if made is None:
            import logging

            made = self._logger = logging.getLogger(self._name)
        return getattr(made, attribute)


def logger(name: str) -> logging.Logger:
    """`logging.getLogger(name)`, made when first used."""
    return cast("logging.Logger", _Logger(name))
