"""Which store keeps a team (files or PostgreSQL) and the one object that hands out its parts; work
on a store given a deadline."""
