"""The shared task board: one task's names, model, shape and facts, edits without the model, the
dependency graph, the board, its index in memory and its summary on disk."""
