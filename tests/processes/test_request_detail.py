"""Approving with your eyes open: `swarm permissions --show ID` prints what a request would do
(the diff of an Edit against the file as it is, the command of a Bash call), a unique prefix or
suffix of an id names its request in `--show`, `approve` and `deny`, and a prefix two requests
share is refused naming both. Real teammates (scripted models) ask; the real CLI answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import swarm, wait_for

SCRIPTS = {
    "alice": (
        "- tool: Edit\n"
        "  input: {file_path: app.py, old_string: 'rate = 1', new_string: 'rate = 2'}\n"
        "- text: Done.\n"
    ),
    "bob": (
        "- tool: Bash\n  input: {command: \"echo '$(whoami)' > out.txt\\nls -l\"}\n- text: Done.\n"
    ),
}


def pending() -> list[dict[str, Any]]:
    listed = swarm("permissions", "--json")
    assert listed.returncode == 0, listed.stderr
    return list(json.loads(listed.stdout))


def test_show_prints_the_diff_and_the_command_and_prefixes_name_requests(
    config_root: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text("import os\n\nrate = 1\nname = 'x'\n")
    assert swarm("team", "create", "t", "--cwd", str(work), team=None).returncode == 0
    for name, script in SCRIPTS.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(script)
        spawned = swarm(
            "spawn",
            name,
            "-p",
            "Go.",
            "--script",
            str(path),
            "--backend",
            "subprocess",
            "--cwd",
            str(work),
        )
        assert spawned.returncode == 0, spawned.stderr
    try:
        both = wait_for(lambda: len(got := pending()) == 2 and got, "both requests", timeout=30)
        by_tool = {r["tool"]: r for r in both}
        edit, bash = by_tool["Edit"], by_tool["Bash"]

        shown = swarm("permissions", "--show", edit["id"][:-3])  # a prefix of the id
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        assert edit["id"] in lines[0] and "alice" in lines[0]
        assert "-rate = 1" in lines and "+rate = 2" in lines, shown.stdout
        assert " import os" in lines  # context from the file as it is now
        assert any(line.startswith("--- ") and line.endswith("app.py") for line in lines)

        as_json = json.loads(swarm("permissions", "--show", bash["id"], "--json").stdout)
        assert as_json["id"] == bash["id"]
        assert as_json["content"] == ["$ echo '$(whoami)' > out.txt", "$ ls -l"]

        # a prefix both ids share names neither: refused, naming both, nothing answered
        assert edit["id"].startswith("perm-") and bash["id"].startswith("perm-")
        refused = swarm("approve", "perm-")
        assert refused.returncode != 0
        assert edit["id"] in refused.stderr and bash["id"] in refused.stderr
        assert "Traceback" not in refused.stderr
        missing = swarm("permissions", "--show", "nonesuch")
        assert missing.returncode != 0 and "nonesuch" in missing.stderr
        assert len(pending()) == 2

        # the last characters of an id are enough too
        approved = swarm("approve", edit["id"][-6:])
        assert approved.returncode == 0, approved.stderr
        assert edit["id"] in approved.stdout  # says which request, in full
        wait_for(lambda: "rate = 2" in (work / "app.py").read_text(), "the approved edit")
        denied = swarm("deny", bash["id"][:-2], "--reason", "not now")
        assert denied.returncode == 0, denied.stderr
        wait_for(lambda: not pending(), "no request waiting")
        assert not (work / "out.txt").exists()
    finally:
        swarm("shutdown", "alice", "--force", "--wait", "5")
        swarm("shutdown", "bob", "--force", "--wait", "5")
