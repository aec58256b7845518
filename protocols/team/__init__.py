"""The team file ``config.json``: the file, its models and shapes, and the lead's signatures and
key."""
