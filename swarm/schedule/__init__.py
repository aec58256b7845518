"""Scheduled runs: a cron expression and what to do when it fires (add a task, send a message,
bring a team up), kept under the config root and fired exactly once by whichever schedulers run
(`swarm scheduler`, `swarm lead`, `swarm host serve`).

`cron` parses and steps expressions, `book` keeps the schedule files, `firing` does what a
schedule says, `scheduler` decides what is due and fires it under the schedule's lock.
"""
