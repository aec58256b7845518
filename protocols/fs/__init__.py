"""The file substrate: opening without following links, Claude Code's JSON bytes and atomic writes,
the two-layer file locks and their waits, and the cache of parsed files."""
