"""One member's inbox: ids and entries, the file and its group commit (the spool), the record of
every message, and the mailbox that delivers between members."""
