"""teammate: one agent process (runtime loop, inbox handling, auto-claim, brains, tools).

Not built yet: it arrives with issue 3. It will import `protocols` only, never `swarm`.
"""
