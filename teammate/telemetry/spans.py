"""The spans of an agent's turn: each model request (GenAI semantic conventions), each tool
call, each permission wait. With telemetry off each is a no-op that imports nothing.

A span is the child of the current one: the task's ``swarm task work`` span for a teammate's
turn, the ``execute_tool Agent`` span for a sub-agent's (`teammate.agent.subagents` runs it
under the context it was started in).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from protocols.clock import ms_from_iso, now_ms
from protocols.trace_context import carrier_of, telemetry_enabled

if TYPE_CHECKING:
    from protocols.inbox.entry import InboxEntry
    from teammate.api.model import Usage

Done = Callable[["Usage"], None]
TEAMMATE_SERVICE = "swarm-teammate"  # a teammate process (OTEL_SERVICE_NAME wins)
LEAD_SERVICE = "swarm-lead"  # a lead agent's process (`swarm lead`)


def _ignore(_usage: Usage) -> None:
    pass


@contextmanager
def model_span(model: str) -> Iterator[Done]:
    """A ``chat <model>`` span around one request; call what it yields with the reply's usage."""
    if not telemetry_enabled():
        yield _ignore
        return
    from protocols.member.prices import PriceTable, default_prices
    from teammate.telemetry import metrics, tracing

    attributes = {
        "gen_ai.system": "anthropic",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
    }
    with tracing.span(f"chat {model}", attributes=attributes, service=TEAMMATE_SERVICE) as span:

        def done(usage: Usage) -> None:
            cost = PriceTable(default_prices(), {}).cost(model, usage.to_value())
            found: dict[str, Any] = {
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "gen_ai.usage.cache_read_input_tokens": usage.cache_read_input_tokens,
                "gen_ai.usage.cache_creation_input_tokens": usage.cache_creation_input_tokens,
            }
            if cost is not None:
                found["swarm.cost_usd"] = cost
            span.set_attributes(found)
            metrics.model_call(model, usage, cost)

        yield done


def tool_span(name: str, use_id: str) -> Any:
    """An ``execute_tool <name>`` span around one tool call (a no-op when off)."""
    if not telemetry_enabled():
        return nullcontext()
    from teammate.telemetry import tracing

    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": use_id,
    }
    return tracing.span(f"execute_tool {name}", attributes=attributes, service=TEAMMATE_SERVICE)


def permission_span(name: str) -> Any:
    """A ``permission wait`` span while the lead is asked about a call of `name`."""
    if not telemetry_enabled():
        return nullcontext()
    from teammate.telemetry import tracing

    attributes = {"gen_ai.tool.name": name}
    return tracing.span("permission wait", attributes=attributes, service=TEAMMATE_SERVICE)


def agent_span(agent_type: str, agent_id: str) -> Any:
    """An ``invoke_agent <type>`` span around a sub-agent's play, under its Agent call's span;
    its ``agent_id`` is the sub-agent's, ``parent_agent_id`` the current span's agent."""
    if not telemetry_enabled():
        return nullcontext()
    from teammate.telemetry import tracing

    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent_type,
        "agent_id": agent_id,
        "parent_agent_id": tracing.current_agent_id(),
    }
    return tracing.span(
        f"invoke_agent {agent_type}", attributes=attributes, service=TEAMMATE_SERVICE
    )


def respond_span(entries: Sequence[InboxEntry], agent_id: str) -> Any:
    """A ``swarm message respond`` span while `agent_id` answers `entries`: the child of the
    first sender's span, linked to every sender's; each entry's delivery latency recorded."""
    if not telemetry_enabled():
        return nullcontext()
    from opentelemetry.trace import SpanKind

    from teammate.telemetry import metrics, tracing

    carriers = [c for c in (carrier_of(e.model_extra) for e in entries) if c]
    metrics.queue_depth(len(entries))
    now = now_ms()
    for entry in entries:
        sent = ms_from_iso(entry.timestamp)
        if sent is not None:
            metrics.delivery_latency(max(0, now - sent) / 1000)
    attributes = {"agent_id": agent_id, "swarm.messages": len(entries)}
    first = carriers[0] if carriers else None
    return tracing.span(
        "swarm message respond", first, attributes, SpanKind.CONSUMER, TEAMMATE_SERVICE, carriers
    )


def lead_turn_span(agent_id: str) -> Any:
    """An ``invoke_agent team-lead`` span around one turn of the lead agent: its requests and
    tool calls nest in it, and what it creates or sends carries its context."""
    if not telemetry_enabled():
        return nullcontext()
    from teammate.telemetry import tracing

    attributes = {"gen_ai.operation.name": "invoke_agent", "agent_id": agent_id}
    return tracing.span("invoke_agent team-lead", attributes=attributes, service=LEAD_SERVICE)
