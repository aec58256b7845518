"""protocols.collector: the cycle collector paused over a big import and skipped at exit, each in a
fresh interpreter (freezing is for the whole process). What it saves is measured in
docs/perf-log.md, not asserted here."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_an_import_frozen_is_kept_out_of_later_passes_and_the_collector_runs_again() -> None:
    out = run(
        "import gc, sys\n"
        "from protocols.collector import import_frozen\n"
        "before = gc.get_freeze_count()\n"
        "module = import_frozen('email.mime.text')\n"
        "print(module is sys.modules['email.mime.text'], gc.isenabled(),\n"
        "      gc.get_freeze_count() > before)\n"
    )
    assert out == "True True True"


def test_a_failed_import_still_turns_the_collector_back_on() -> None:
    out = run(
        "import gc\n"
        "from protocols.collector import import_frozen\n"
        "try:\n"
        "    import_frozen('no_such_module_here')\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, gc.isenabled())\n"
    )
    assert out == "ModuleNotFoundError True"


@pytest.mark.parametrize("enabled", [True, False])
def test_a_pause_leaves_the_collector_as_it_found_it(enabled: bool) -> None:
    out = run(
        "import gc\n"
        "from protocols.collector import collection_paused\n"
        f"gc.enable() if {enabled} else gc.disable()\n"
        "with collection_paused():\n"
        "    inside = gc.isenabled()\n"
        "print(inside, gc.isenabled())\n"
    )
    assert out == f"False {enabled}"


def test_the_last_pass_is_skipped_and_later_exit_handlers_still_run() -> None:
    # a cycle whose finalizer would print in the last pass: with it skipped, only the exit
    # handler registered after `no_last_collection` prints
    out = run(
        "import atexit\n"
        "from protocols.collector import no_last_collection\n"
        "no_last_collection(); no_last_collection()\n"
        "class Cycle:\n"
        "    def __del__(self): print('finalized')\n"
        "c = Cycle(); c.me = c\n"
        "atexit.register(print, 'exit handler')\n"
    )
    assert out == "exit handler"
