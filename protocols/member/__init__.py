"""swarm's per-member files and their money: a teammate's status file and its shape, its budget,
the model catalogue and prices."""
