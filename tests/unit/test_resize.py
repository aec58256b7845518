"""`swarm.views.resize`: a terminal resize wakes `swarm watch` from an ordinary thread, never by
a signal handler that could wait for a lock its own thread holds."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# Run in a process of its own: the hang this guards against would hang the test run itself.
SCRIPT = textwrap.dedent(
    """
    import os, signal, threading
    from swarm.views.resize import on_resize

    lock = threading.Lock()  # what the wake takes: as an Event's set takes its condition's
    woken = threading.Event()

    def wake():
        with lock:
            woken.set()

    def step():
        return None

    with on_resize(wake):
        for _ in range(3):
            woken.clear()
            with lock:  # the main thread holds the lock as the signal comes
                os.kill(os.getpid(), signal.SIGWINCH)
                for _ in range(10_000):
                    step()  # calls: where a Python-level handler would run
            assert woken.wait(30), "the resize never woke"
    print("resized 3 times")
    # after the block: the previous handler is back, and nothing is relayed
    assert signal.getsignal(signal.SIGWINCH) in (signal.SIG_DFL, None)
    assert threading.active_count() == 1, threading.enumerate()
    """
)


def test_a_resize_while_the_main_thread_holds_the_lock_wakes_without_a_hang() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "resized 3 times"


def test_outside_the_main_thread_nothing_is_set_up() -> None:
    import signal
    import threading

    from swarm.views.resize import on_resize

    before = signal.getsignal(signal.SIGWINCH)
    seen: list[object] = []

    def inside() -> None:
        with on_resize(lambda: None):
            seen.append(signal.getsignal(signal.SIGWINCH))

    thread = threading.Thread(target=inside)
    thread.start()
    thread.join(30)
    assert seen == [before]
