"""`swarm.signal_relay`: a signal (a terminal resize, a SIGTERM) reaches `swarm watch` and
`swarm bridge` as a call in an ordinary thread, never from a signal handler that could wait for
a lock its own thread holds."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Run in a process of its own: the hang this guards against would hang the test run itself.
SCRIPT = textwrap.dedent(
    """
    import os, signal, threading
    from swarm.signal_relay import relayed

    lock = threading.Lock()  # what the call takes: as an Event's set takes its condition's
    heard = []
    woken = threading.Event()

    def call(signum):
        with lock:
            heard.append(signal.Signals(signum).name)
            woken.set()

    def step():
        return None

    with relayed({signal.SIGWINCH, signal.SIGTERM}, call):
        for signum in (signal.SIGWINCH, signal.SIGWINCH, signal.SIGTERM):
            woken.clear()
            with lock:  # the main thread holds the lock as the signal comes
                os.kill(os.getpid(), signum)
                for _ in range(10_000):
                    step()  # calls: where a Python-level handler would run
            assert woken.wait(30), "the signal was never relayed"
    print(" ".join(heard))
    # after the block: the previous handlers are back, and the relay thread is gone
    assert signal.getsignal(signal.SIGWINCH) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert threading.active_count() == 1, threading.enumerate()
    """
)


def test_a_signal_while_the_main_thread_holds_the_lock_is_relayed_without_a_hang() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "SIGWINCH SIGWINCH SIGTERM"


def test_outside_the_main_thread_nothing_is_set_up() -> None:
    import signal
    import threading

    from swarm.signal_relay import relayed

    before = signal.getsignal(signal.SIGWINCH)
    seen: list[object] = []

    def inside() -> None:
        with relayed({signal.SIGWINCH}, lambda _: None):
            seen.append(signal.getsignal(signal.SIGWINCH))

    thread = threading.Thread(target=inside)
    thread.start()
    thread.join(30)
    assert seen == [before]


def test_the_block_ends_even_while_a_call_is_stuck(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call that does not return (it waits for something the main thread will never give)
    delays the end of the block by `JOIN_S` at most; the stuck relay keeps its pipe."""
    import os
    import signal
    import threading

    from swarm import signal_relay

    monkeypatch.setattr(signal_relay, "JOIN_S", 0.2)
    entered, release, returned = threading.Event(), threading.Event(), threading.Event()

    def stuck(_: int) -> None:
        entered.set()
        release.wait(10)
        returned.set()

    try:
        with signal_relay.relayed({signal.SIGWINCH}, stuck):
            os.kill(os.getpid(), signal.SIGWINCH)
            assert entered.wait(30), "the signal was never relayed"
        assert not returned.is_set(), "the block waited for the stuck call to return"
        assert signal.getsignal(signal.SIGWINCH) is not signal_relay._nothing
    finally:
        release.set()
