"""How often, and after how long, a failed model request is tried again (Claude Code's rules).

A request that failed in a way the API says is passing (429, 529, 5xx, a connection that could
not be made or broke in the middle of the stream, an ``overloaded_error`` event after the answer
began) is tried again up to `RetryPolicy.max_retries` times: 10 by default,
``CLAUDE_CODE_MAX_RETRIES`` sets 0 to 15. Before each retry it waits the ``retry-after`` the
API sent (at most `MAX_RETRY_AFTER_S`), else an exponential back-off: 0.5 s, 1 s, 2 s ... up to
32 s, with up to a quarter more at random so that many teammates do not come back in step.
After `STREAM_FAILURES_BEFORE_PLAIN` streams in a row broke, the next try asks for the whole
answer at once, without streaming.

Pure: the loop (`teammate.agent.loop`) does the waiting, through its team link, so every wait
shows in the status and a shutdown request is answered during it.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from teammate.api.model_settings import SettingsValueError

DEFAULT_RETRIES = 10
MOST_RETRIES = 15
BASE_DELAY_S = 0.5
MAX_DELAY_S = 32.0
MAX_RETRY_AFTER_S = 600.0
JITTER = 0.25
STREAM_FAILURES_BEFORE_PLAIN = 2


def retries_from(environ: Mapping[str, str] | None = None) -> int:
    """``CLAUDE_CODE_MAX_RETRIES`` (0-15), or the default; a bad value is an error naming it."""
    env = os.environ if environ is None else environ
    value = env.get("CLAUDE_CODE_MAX_RETRIES")
    if value is None or value.strip() == "":
        return DEFAULT_RETRIES
    if not value.strip().isdigit() or int(value) > MOST_RETRIES:
        raise SettingsValueError(
            f"CLAUDE_CODE_MAX_RETRIES must be a whole number from 0 to {MOST_RETRIES}, "
            f"not {value!r}"
        )
    return int(value)


@dataclass
class RetryPolicy:
    """The retry rules (module doc); `rand` is the jitter's source (a seam for tests)."""

    max_retries: int = DEFAULT_RETRIES
    rand: Callable[[], float] = field(default=random.random, repr=False)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `attempt` (1 for the first)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), MAX_RETRY_AFTER_S)
        base = min(BASE_DELAY_S * 2 ** (attempt - 1), MAX_DELAY_S)
        return base * (1 + JITTER * self.rand())

    @staticmethod
    def stream_next(stream_failures: int) -> bool:
        """Whether the next try streams, after `stream_failures` broken streams in a row."""
        return stream_failures < STREAM_FAILURES_BEFORE_PLAIN
