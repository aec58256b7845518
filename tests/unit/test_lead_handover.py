"""The console thread hands teammates' messages to the lead agent's thread (`LeadAgent.hand_over`)
while the agent's turns take them between model calls (`LeadLink.between_turns`) and end: with
real threads, every message handed over reaches the model exactly once, in the order handed over,
whether it lands mid-turn, at the end of a turn or between turns.

The agent loop is replaced by a stand-in that takes what arrived as fast as it can, so the two
threads contend as hard as they can; a short thread switch interval makes them switch often.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from protocols.inbox.entry import InboxEntry
from protocols.paths import TeamPaths
from swarm.lead.agent import LeadAgent
from swarm.lead.tools import LeadLink
from teammate.agent.loop import LoopResult
from teammate.api.model import ScriptedModel

MESSAGE = re.compile(r"<teammate-message [^>]*>\n(.*?)\n</teammate-message>", re.DOTALL)


def entry(i: int) -> InboxEntry:
    return InboxEntry.model_validate(
        {"from": "alice", "text": str(i), "timestamp": "2026-01-01T00:00:00.000Z"}
    )


class LoopStandIn:
    """The agent loop's part in a turn: the turn's input, then what arrives between model calls.

    A turn takes `takes` times, or (`takes` None) until `stop` is set and then once more.
    `received` is every message text in the order the model would have read it.
    """

    def __init__(self, link: LeadLink, takes: int | None = None) -> None:
        self.link = link
        self.takes = takes
        self.received: list[str] = []
        self.started = threading.Event()
        self.stop = threading.Event()

    def run(self, prompt: str) -> LoopResult:
        self.received.extend(MESSAGE.findall(prompt))
        self.started.set()
        if self.takes is None:
            while not self.stop.is_set():
                self._take()
        for _ in range(self.takes or 1):
            self._take()
        return LoopResult("end_turn", "", 1)

    def _take(self) -> None:
        self.received.extend(e.text for e in self.link.between_turns())


@pytest.fixture(autouse=True)
def switch_often() -> Iterator[None]:
    """Threads switch every microsecond instead of every 5 ms: races show up in every run."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.fixture
def lead(paths: TeamPaths, tmp_path: Path) -> Iterator[LeadAgent]:
    agent = LeadAgent(ScriptedModel([]), LeadLink(paths, tmp_path), say=lambda text: None)
    yield agent
    agent.stop()


def wait_until(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def assert_each_once_in_order(received: list[str], count: int) -> None:
    expected = [str(i) for i in range(count)]
    counts = Counter(received)
    lost = [t for t in expected if t not in counts]
    duplicated = sorted((t for t, n in counts.items() if n > 1), key=int)
    assert not lost, f"{len(lost)} of {count} messages lost, e.g. {lost[:5]}"
    assert not duplicated, f"{len(duplicated)} messages taken twice, e.g. {duplicated[:5]}"
    assert received == expected, "messages reached the model out of order"


def test_messages_handed_over_during_a_turn_are_each_taken_once(lead: LeadAgent) -> None:
    count = 200_000
    entries = [entry(i) for i in range(count)]
    loop = lead.loop = LoopStandIn(lead.link)  # type: ignore[assignment]

    def console() -> None:
        loop.started.wait()
        for one in entries:
            lead.hand_over([one])
        loop.stop.set()

    handing = threading.Thread(target=console)
    lead.start()
    handing.start()
    lead.tell("go")
    handing.join()
    wait_until(lambda: len(loop.received) >= count, timeout_s=5)
    assert_each_once_in_order(loop.received, count)


def test_messages_handed_over_as_turns_end_are_neither_stranded_nor_reordered(
    lead: LeadAgent,
) -> None:
    count = 20_000
    entries = [entry(i) for i in range(count)]
    loop = lead.loop = LoopStandIn(lead.link, takes=2)  # type: ignore[assignment]
    lead.start()
    for one in entries:
        lead.hand_over([one])
    wait_until(lambda: len(loop.received) >= count, timeout_s=5)
    assert_each_once_in_order(loop.received, count)


def test_the_link_says_when_the_agent_must_be_woken_for_messages(
    paths: TeamPaths, tmp_path: Path
) -> None:
    link = LeadLink(paths, tmp_path)
    assert link.deliver([entry(0)]) is False  # no turn runs: wake the agent
    link.begin_turn()
    assert link.deliver([entry(1)]) is True  # the running turn takes it
    assert [e.text for e in link.between_turns()] == ["0", "1"]
    assert link.deliver([entry(2)]) is True
    assert link.end_turn() is True  # delivered after the turn's last take: wake the agent
    assert not link.busy
    assert [e.text for e in link.between_turns()] == ["2"]
    link.begin_turn()
    assert link.end_turn() is False and link.between_turns() == []
