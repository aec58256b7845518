"""Many idle teammates, real processes: 60 shell teammates (subprocesses) go idle, then the lead
broadcasts to ``"*"`` three times and sends one of them a direct message. Every teammate reads
every broadcast (nothing stays unread, nothing is lost), each acknowledgement reaches the lead
once, and the direct message reaches only its recipient. Teammates beyond the user's inotify
instances (128, shared with every other process of the user) poll instead, and must be just as
complete."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from helpers import wait_for

from protocols import Mailbox, TeamFile, TeamPaths
from swarm.team.lifecycle import request_shutdown, spawn_member
from swarm.team.signatures import lead_mailbox
from teammate.options import MemberSpec

pytestmark = pytest.mark.slow

TEAMMATES = 60
ROUNDS = 3


def idle(mailbox: Mailbox, team: TeamFile, names: list[str]) -> bool:
    config = team.load()
    return all(
        (m := config.member(n)) is not None and m.isActive is False for n in names
    ) and not any(mailbox.read_unread(n) for n in names)


def test_a_broadcast_reaches_every_idle_teammate_of_sixty(
    paths: TeamPaths, config_root: Path, tmp_path: Path
) -> None:
    team = TeamFile(paths)
    team.create(description="idle", cwd=tmp_path)
    names = [f"w{n}" for n in range(TEAMMATES)]
    mailbox = lead_mailbox(paths)  # signed as the lead: its teammates check (--lead-verify-key)
    try:
        for name in names:
            spec = MemberSpec(backend="subprocess", cwd=str(tmp_path))
            spawn_member(paths, name, "Nothing to do yet.", spec)
        wait_for(lambda: idle(mailbox, team, names), "every teammate to go idle", 300)
        lead_before = len(mailbox.peek_all("team-lead"))
        for n in range(ROUNDS):
            mailbox.broadcast(f"round {n}", sender="team-lead")
        mailbox.send(names[-1], "just you", sender="team-lead")
        texts = [f"round {n}" for n in range(ROUNDS)]

        def everyone_read() -> bool:
            return all(
                [e.text for e in mailbox.peek_all(name) if e.text in texts] == texts
                and not mailbox.read_unread(name)
                for name in names
            )

        wait_for(everyone_read, "every teammate to read every broadcast", 300)
        assert [e.text for e in mailbox.peek_all(names[-1])].count("just you") == 1
        assert all("just you" not in [e.text for e in mailbox.peek_all(n)] for n in names[:-1])

        def acknowledged() -> Counter[str]:
            return Counter(
                e.from_
                for e in mailbox.peek_all("team-lead")[lead_before:]
                if e.text.startswith("Received: 'round")
            )

        wait_for(
            lambda: sum(acknowledged().values()) >= TEAMMATES * ROUNDS, "acknowledgements", 300
        )
        assert acknowledged() == Counter({name: ROUNDS for name in names})
    finally:
        for name in names:
            if team.load().member(name) is not None:
                request_shutdown(paths, name, wait_s=10, force=True)
