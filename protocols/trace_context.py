"""Whether telemetry is on, and where a trace context travels in the team's files.

Pure and cheap: it reads the environment and never imports ``opentelemetry``. Telemetry is
on only when Claude Code's ``CLAUDE_CODE_ENABLE_TELEMETRY`` is truthy and the standard
``OTEL_TRACES_EXPORTER`` does not say ``none``. A W3C trace context (``traceparent`` and
``tracestate``) rides in a task's ``metadata`` and in an inbox entry under `TRACE_KEY`,
an extra key Claude Code ignores. A task's also keeps when it was added (`ADDED_AT`, ms), for
the claim latency.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

TRACE_KEY = "swarmTrace"
ADDED_AT = "addedAt"  # in a task's carrier: when it was added, ms since the epoch
ENABLE_VAR = "CLAUDE_CODE_ENABLE_TELEMETRY"
_TRUE = {"1", "true", "yes", "on"}
_outgoing: list[Callable[[], dict[str, str]]] = []  # set by the tracer when it is set up


def telemetry_enabled(env: Mapping[str, str] | None = None) -> bool:
    """True when the environment switches telemetry on (off by default)."""
    env = os.environ if env is None else env
    if env.get(ENABLE_VAR, "").strip().lower() not in _TRUE:
        return False
    return env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() != "none"


def carrier_of(record: Mapping[str, Any] | None) -> dict[str, str]:
    """The trace context kept in `record` (a task's metadata, an inbox entry), or {}."""
    if not record:
        return {}
    found = record.get(TRACE_KEY)
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def set_outgoing(carrier: Callable[[], dict[str, str]]) -> None:
    """Have every new inbox entry carry what `carrier` returns (the tracer sets it up)."""
    _outgoing[:] = [carrier]


def outgoing_carrier() -> dict[str, str]:
    """The trace context a message sent now carries ({}: none; always so when off)."""
    return _outgoing[0]() if _outgoing else {}


def traced_metadata(metadata: dict[str, Any] | None, now_ms: int) -> dict[str, Any] | None:
    """A new task's `metadata`, with the current span's context and `now_ms` under `TRACE_KEY`
    when there is a current span (as given otherwise: always so when off)."""
    carrier = outgoing_carrier()
    if not carrier or (metadata and TRACE_KEY in metadata):
        return metadata
    return {**(metadata or {}), TRACE_KEY: {**carrier, ADDED_AT: str(now_ms)}}


def added_at_ms(record: Mapping[str, Any] | None) -> int | None:
    """When the task whose metadata is `record` was added, if its carrier says."""
    found = carrier_of(record).get(ADDED_AT, "")
    return int(found) if found.isdigit() else None
