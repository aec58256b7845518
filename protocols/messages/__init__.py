"""Structured protocol messages: their models, their pydantic-free shapes and decoding, and request
ids."""
