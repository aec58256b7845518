"""Structured protocol messages: their models, their pydantic-free shapes, request ids, and the
permission requests' store."""
