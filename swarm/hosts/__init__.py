"""Hosts: one `swarm host serve` agent per machine of a PostgreSQL team, starting and stopping
teammates there on request (`agent`), and the lead's side of those requests (`requests`)."""
