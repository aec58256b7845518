"""The file substrate: opening without following links, Claude Code's JSON bytes and atomic writes,
the two-layer file locks and their waits, the cache of parsed files, and the doorbells a write
rings for a reader without inotify."""
