"""What ``swarm status`` prints for a team: its snapshot as the table, or as JSON.

Click-free, so that the command's quick path (`swarm.cli.quick`) and its click command
(`swarm.cli.status`) print the very same text through one function.
"""

from __future__ import annotations

from protocols.collector import collection_paused
from protocols.paths import TeamPaths
from protocols.printable import printable_json
from swarm.views.snapshot import snapshot, to_json
from swarm.views.table import render


def status_report(paths: TeamPaths, as_json: bool) -> str:
    """The team as `swarm status` shows it (without the final newline): members, their tasks,
    model calls and tokens, task counts and pending requests; JSON with control characters
    escaped (`printable_json`), or the table (which escapes its cells itself)."""
    # a look makes ~100,000 objects (10,000 tasks, 200 members) and no cycles: the collector's
    # passes over them would cost ~5 ms of a command that exits right after
    with collection_paused():
        view = snapshot(paths, once=True)
        if as_json:
            return printable_json(to_json(view), indent=2)
        return render(view)
