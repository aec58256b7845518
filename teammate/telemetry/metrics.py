"""The metrics of one process: tokens and cost per model, claim latency, delivery latency and
the depth of the inbox when it is read, exported over OTLP/HTTP every
``OTEL_METRIC_EXPORT_INTERVAL`` ms (60 s by default) and when the process ends
(``OTEL_METRICS_EXPORTER=none`` turns them off). Imported only when telemetry is on."""

from __future__ import annotations

import atexit
import os
import threading
from typing import TYPE_CHECKING

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import Counter, Histogram
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from teammate.telemetry.tracing import service_name

if TYPE_CHECKING:
    from teammate.api.model import Usage

_lock = threading.Lock()
_instruments: _Instruments | None = None


class _Instruments:
    def __init__(self, provider: MeterProvider) -> None:
        self.provider = provider
        meter = provider.get_meter("swarm")
        self.tokens: Counter = meter.create_counter("gen_ai.client.token.usage", "{token}")
        self.cost: Counter = meter.create_counter("swarm.cost", "USD")
        self.claim: Histogram = meter.create_histogram("swarm.task.claim_latency", "s")
        self.delivery: Histogram = meter.create_histogram("swarm.message.delivery_latency", "s")
        self.depth: Histogram = meter.create_histogram("swarm.inbox.queue_depth", "{message}")


def _get() -> _Instruments | None:
    global _instruments
    if os.environ.get("OTEL_METRICS_EXPORTER", "otlp").strip().lower() == "none":
        return None
    with _lock:
        if _instruments is None:
            name = os.environ.get("OTEL_SERVICE_NAME") or service_name()
            reader = PeriodicExportingMetricReader(OTLPMetricExporter())
            provider = MeterProvider([reader], resource=Resource.create({"service.name": name}))
            atexit.register(provider.shutdown)
            _instruments = _Instruments(provider)
        return _instruments


def model_call(model: str, usage: Usage, cost: float | None) -> None:
    """Count one request's tokens (by type) and cost."""
    got = _get()
    if got is None:
        return
    for kind, count in (
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
        ("cache_read", usage.cache_read_input_tokens),
        ("cache_creation", usage.cache_creation_input_tokens),
    ):
        got.tokens.add(count, {"gen_ai.request.model": model, "gen_ai.token.type": kind})
    if cost is not None:
        got.cost.add(cost, {"gen_ai.request.model": model})


def claim_latency(seconds: float) -> None:
    """Time from a task's creation to the work on it starting (it was just claimed)."""
    got = _get()
    if got is not None:
        got.claim.record(seconds)


def delivery_latency(seconds: float) -> None:
    """Time from a message's send to its reading."""
    got = _get()
    if got is not None:
        got.delivery.record(seconds)


def queue_depth(unread: int) -> None:
    """How many messages were waiting when a member read its inbox."""
    got = _get()
    if got is not None:
        got.depth.record(unread)
