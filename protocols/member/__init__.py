"""swarm's per-member files and their money: a teammate's status file, its budget, the model
catalogue and prices, and what a team spent together."""
