"""`swarm lead`: the lead's inbox turned into events (`inbox`), the terminal console (`console`),
the Claude lead agent (`agent`) and its team-management tools (`tools`)."""
