"""swarm: the orchestrator and the `swarm` command line (spawn backends, the leader, status).

Not built yet: it arrives with issue 3. Today the working layer is `protocols`, the team's files.
"""
