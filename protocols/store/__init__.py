"""Which store keeps a team (files or PostgreSQL) and the one object that hands out its parts; what
a team spent together."""
