"""The tracer of one process: the SDK set up from the standard ``OTEL_*`` variables, spans
continued from a carrier (`protocols.trace_context`), and the carrier of the current span.

Imported only when telemetry is on. The OTLP/HTTP exporter reads its endpoint, headers and
protocol from the environment itself (``OTEL_EXPORTER_OTLP_ENDPOINT`` and kin); the service
name comes from ``OTEL_SERVICE_NAME`` (default: the name given here).
"""

from __future__ import annotations

import atexit
import contextvars
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Link, Span, SpanKind

from protocols.trace_context import set_outgoing

_lock = threading.Lock()
_provider: TracerProvider | None = None
CLI_SERVICE = "swarm"  # a one-shot command's spans (`swarm task add`)
CLI_EXPORT_TIMEOUT_S = 2.0
_service = [CLI_SERVICE]  # the service name the provider was made with
_agent: contextvars.ContextVar[str | None] = contextvars.ContextVar("agent", default=None)


def setup(service: str) -> TracerProvider:
    """This process's provider, made once (the first caller's `service` names the process:
    ``swarm`` for a CLI command, ``swarm-lead``, ``swarm-teammate``); its spans are flushed
    when the process exits."""
    global _provider
    with _lock:
        if _provider is None:
            name = os.environ.get("OTEL_SERVICE_NAME") or service
            _service[0] = name
            provider = TracerProvider(resource=Resource.create({"service.name": name}))
            exporter = OTLPSpanExporter(timeout=_export_timeout(service))
            provider.add_span_processor(BatchSpanProcessor(exporter))
            _provider = provider
            atexit.register(provider.shutdown)
            set_outgoing(current_carrier)  # messages sent in a span carry its context
        return _provider


def _export_timeout(service: str) -> float | None:
    """A one-shot command (`CLI_SERVICE`) gives up on an unreachable receiver after
    `CLI_EXPORT_TIMEOUT_S`, not the exporter's 10 s: a `swarm task add` must not hang on it.
    None (the exporter's default) for the long-lived processes, or when the standard
    ``OTEL_EXPORTER_OTLP_TIMEOUT`` variables say."""
    said = ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
    if service != CLI_SERVICE or any(os.environ.get(v) for v in said):
        return None
    return CLI_EXPORT_TIMEOUT_S


def service_name() -> str:
    """The service name of this process's spans (``swarm`` until `setup`)."""
    return _service[0]


def flush() -> None:
    """Send what this process has ended so far."""
    if _provider is not None:
        _provider.force_flush()


@contextmanager
def span(
    name: str,
    carrier: Mapping[str, str] | None = None,
    attributes: Mapping[str, Any] | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
    service: str = "swarm",
    links: Sequence[Mapping[str, str]] = (),
) -> Iterator[Span]:
    """A span named `name`, the child of the context in `carrier` when it holds one, else of
    the current span (a new trace when there is none)."""
    tracer = setup(service).get_tracer("swarm")
    parent = propagate.extract(dict(carrier)) if carrier else None
    given = {k: v for k, v in (attributes or {}).items() if v is not None}
    agent = given.get("agent_id")
    token = _agent.set(agent) if isinstance(agent, str) else None
    linked = [k for k in (_link(c) for c in links) if k is not None]
    try:
        with tracer.start_as_current_span(
            name, context=parent, kind=kind, attributes=given, links=linked
        ) as s:
            yield s
    finally:
        if token is not None:
            _agent.reset(token)


def _link(carrier: Mapping[str, str]) -> Link | None:
    """A link to the span whose context `carrier` holds (None: it holds none)."""
    context = trace.get_current_span(propagate.extract(dict(carrier))).get_span_context()
    return Link(context) if context.is_valid else None


def current_carrier() -> dict[str, str]:
    """The current span's context as ``traceparent`` (and ``tracestate``) strings."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def current_agent_id() -> str | None:
    """The ``agent_id`` of the innermost span that said one (None: none did)."""
    return _agent.get()
