"""The bridge: a PostgreSQL team mirrored into this host's files, for Claude Code members.

Claude Code speaks only files. `Bridge` keeps a file team under this host's config root
(``teams/<team>/config.json``, ``teams/<team>/inboxes/``, ``tasks/<team>/``) in step with the
team in PostgreSQL, so a Claude Code lead or teammate living on this host works in a team that
spans machines:

- the roster goes from the store into ``config.json`` (the store is its truth), but for the
  ``isActive`` Claude Code writes into a local member's entry, carried to the store;
- messages, both ways, each once by its identity (`protocols.bridge.inboxes`): for the members
  that live on this host (`local`, named by whoever starts the bridge) their inbox files and
  their inboxes in the store are one inbox; every other member's inbox file is where a local
  member's messages to it are picked up (permission requests and their answers among them:
  Claude Code sends both as messages);
- tasks, both ways, three-way against what both sides last agreed on
  (`protocols.bridge.tasks`);
- the local members' leases, held while their process lives here (`protocols.bridge.leases`),
  so other hosts see them alive and a dead host's tasks go back to pending.

With ``session`` the file team is the session team of the Claude Code lead running on this
host (`protocols.bridge.session`) rather than ``teams/<team>/``.

A pass (`sync`) is safe to repeat and to cut short at any instant; `run` makes one whenever
either side changes (inotify on the files, ``LISTEN`` on the store), and every `rescan_s`
seconds whatever it heard.
"""

from protocols.bridge.bridge import Bridge, Passed

__all__ = ["Bridge", "Passed"]
