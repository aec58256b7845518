"""OpenTelemetry for swarm's processes, off by default (`protocols.trace_context`).

Only `teammate.telemetry.tracing` imports ``opentelemetry``, and only when a caller that
found telemetry on asks for it: with telemetry off nothing here is loaded.
"""
