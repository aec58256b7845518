"""Wake-ups: the process's one inotify instance, which names in a directory changed, and waking a
reader when its inbox changes."""
