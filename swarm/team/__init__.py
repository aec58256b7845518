"""A team's members seen from the lead: starting and stopping them (`lifecycle`), their processes
and reaping (`members`), requests waiting for an answer (`approvals`), git worktrees
(`isolation`)."""
