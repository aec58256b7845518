"""`swarm mcp`: a team served as an MCP server, each session a member of the team.

session.py (the member a session speaks for), membership.py (joining and leaving the team as
one), tools.py and lead_tools.py (the tools beyond the team tools it shares with swarm's Claude
teammates), server.py (the SDK's server: listing and running the tools), transports.py (stdio,
streamable HTTP).
"""
