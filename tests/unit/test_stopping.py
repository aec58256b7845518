"""teammate.stopping.StopSignals: a SIGTERM raises `Stop` where the teammate waits, and a stop whose
raise Python swallowed (the handler ran inside a weakref callback or a finalizer) is kept, its
wait woken, and raised again by `check`. Each in a fresh interpreter: signal handlers belong to
a process's main thread."""

from __future__ import annotations

import subprocess
import sys

PRELUDE = """if True:
    import os, signal, threading, weakref
    from teammate.stopping import Stop, StopSignals

    woken = threading.Event()
    signals = StopSignals(nudge=woken.set)
"""


def run(body: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PRELUDE + body], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_sigterm_raises_stop_where_it_waits_and_wakes_the_wait() -> None:
    assert run("""
    with signals:
        try:
            threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGTERM)).start()
            threading.Event().wait(60)
            print("not-raised")
        except Stop as stop:
            print(stop.why, woken.wait(60), signals.stopping)
        signals.begin()
        signals.check()  # taken: nothing raised
        print("taken")
    print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
""") == ["SIGTERM", "True", "True", "taken", "True"]


def test_a_stop_whose_raise_a_weakref_callback_swallowed_is_kept_and_raised_by_check() -> None:
    # the handler runs inside the callback (raise_signal runs it at once); its Stop is printed
    # as ignored and lost there
    assert run("""
    class Thing:
        pass

    with signals:
        thing = Thing()
        ref = weakref.ref(thing, lambda _: signal.raise_signal(signal.SIGTERM))
        del thing
        print("went-on", woken.wait(60))
        try:
            signals.check()
            print("not-raised")
        except Stop as stop:
            print(stop.why)
        signals.begin()
        signals.check()
        print("taken")
""") == ["went-on", "True", "SIGTERM", "taken"]


def test_a_sighup_asks_for_a_stop_too_and_later_ones_are_ignored() -> None:
    assert run("""
    with signals:
        try:
            signal.raise_signal(signal.SIGHUP)
        except Stop as stop:
            print(stop.why)
        signals.begin()
        signal.raise_signal(signal.SIGHUP)  # a closing pane's, while stopping
        print("still-here")
""") == ["SIGHUP", "still-here"]


def test_the_relay_thread_ends_with_the_block() -> None:
    assert run("""
    with signals:
        relay = next(t for t in threading.enumerate() if t.name == "stop-relay")
    relay.join(60)
    print(relay.is_alive())
""") == ["False"]
