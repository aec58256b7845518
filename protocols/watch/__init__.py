"""Wake-ups: the process's one inotify instance, which names in a directory changed, doorbells for
a reader without inotify, and waking a reader when its inbox changes."""
