"""The model behind a Claude teammate: `Model`, the Messages API client (the `anthropic` SDK), its
requests, replies and usage, and the scripted model that replays a script offline."""
