"""One member's inbox: ids, entries and their shape, the file and its group commit (the spool), the
record of every message, the mailbox that delivers between members, and the permission requests
that travel through it."""
