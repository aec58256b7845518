"""Real Claude Code as a peer in the tests (spec sections 8 and 9): install it from the npm
registry once, give it a config root it runs in without dialogs, and script its model.

Three versions are the reference peers: 2.1.88 (``cli.js`` run by node), 2.1.330 (a native
binary, with session teams, reading deletes, ``msg_id`` and lead signatures) and 2.1.332, today's
(docs/interop.md says what changed). `install(version)` puts
``@anthropic-ai/claude-code@<version>`` under ``.cache/`` in the repository (or
``$SWARM_CLAUDE_CODE_DIR/<version>``) the first time and returns the ``claude`` program.
Without node or npm it raises `Unavailable` (the tests skip, saying so); a failed install raises
RuntimeError (the tests fail: it is never a skip).

`trust()` writes ``$CLAUDE_CONFIG_DIR/.claude.json`` (Claude Code reads it there, not in
``$HOME``, when ``CLAUDE_CONFIG_DIR`` is set): onboarding done, the test's API key approved
(Claude Code otherwise asks whether to use a key found in the environment), the working
directories trusted, 2.1.330's offer of its fullscreen renderer already seen.

`command()` is the ``--teammate-command`` (or ``CLAUDE_CODE_TEAMMATE_COMMAND`` target) that
starts it with everything optional off: no auto-update check (its ``npm view`` would reach the
registry), no marketplace install, no telemetry.

`reacting()` makes a scripted model for it, for `messages_api.MessagesAPI`: Claude Code makes
side calls (a session title from a small model, with no tools); those get a title, and each main
call is answered by the first rule matching the newest ``<teammate-message>``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import filelock
from messages_api import Turn

VERSION = "2.1.88"  # the eight-month-old peer swarm was first proven against
PREVIOUS = "2.1.330"  # the newest until 2.1.332 (2026-11-20)
NEWEST = "2.1.332"  # the Claude Code people run today
VERSIONS = (VERSION, PREVIOUS, NEWEST)
REPO = Path(__file__).resolve().parent.parent
API_KEY = "sk-ant-swarm-interop-offline-0000"  # any value; the server never checks it
MODEL = "claude-sonnet-4-5"
OFFLINE_ENV = {
    "ANTHROPIC_API_KEY": API_KEY,
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "npm_config_offline": "true",  # its version check runs `npm view` even with the above
}


def package(version: str) -> str:
    return f"@anthropic-ai/claude-code@{version}"


def install_dir(version: str = VERSION) -> Path:
    given = os.environ.get("SWARM_CLAUDE_CODE_DIR")
    return Path(given) / version if given else REPO / ".cache" / f"claude-code-{version}"


def version_of(program: Path) -> str:
    """Which of `VERSIONS` `program` (as `install` returned it) is."""
    found = [v for v in VERSIONS if install_dir(v) in Path(program).parents]
    if not found:
        raise ValueError(f"{program} is none of the installed Claude Code versions {VERSIONS}")
    return found[0]


def is_newest(program: Path) -> bool:
    """Whether `program` is a Claude Code with section 9's changes (2.1.330 or later, not
    2.1.88): session teams, a locked config.json, reading deletes, lead signatures."""
    return version_of(program) != VERSION


class Unavailable(Exception):
    """Claude Code cannot be installed here (node or npm is missing); the message says which."""


def install(version: str = VERSION) -> Path:
    """The ``claude`` program of Claude Code `version`, installed from npm if it is not yet.

    Raises `Unavailable` without node or npm, RuntimeError when the install fails."""
    directory = install_dir(version)
    program = directory / "node_modules" / ".bin" / "claude"
    directory.parent.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(directory) + ".lock"):  # test workers in parallel install once
        _install(directory, program, package(version))
    return _check_version(program, version)


def _install(directory: Path, program: Path, package: str) -> None:
    if not program.exists():
        missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
        if missing:
            raise Unavailable(f"{' and '.join(missing)} not installed: needed to install {package}")
        directory.mkdir(parents=True, exist_ok=True)
        # newer versions are a native binary in an optional dependency: never --omit=optional
        result = subprocess.run(
            ["npm", "install", "--prefix", str(directory), "--no-audit", "--no-fund", package],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if result.returncode != 0 or not program.exists():
            raise RuntimeError(f"npm install {package} failed:\n{result.stdout}\n{result.stderr}")
        # the bundled ripgrep comes without its execute bit (Glob and Grep fail with EACCES)
        for rg in (directory / "node_modules" / "@anthropic-ai" / "claude-code").glob(
            "vendor/ripgrep/*/rg"
        ):
            rg.chmod(0o755)


def _check_version(program: Path, expected: str) -> Path:
    version = subprocess.run(
        [str(program), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **OFFLINE_ENV},
        check=False,
    ).stdout
    if expected not in version:
        raise RuntimeError(f"{program} says it is {version!r}, not {expected}")
    return program


def trust(config_root: Path, *cwds: Path) -> None:
    """Let Claude Code start under `config_root` in `cwds` without a dialog."""
    state = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "projects": {str(cwd): {"hasTrustDialogAccepted": True} for cwd in cwds},
        # 2.1.330 may offer its fullscreen renderer after a turn: a dialog that holds the
        # next turn until someone answers it; it is offered a few times, so say it was
        "fullscreenUpsellSeenCount": 100,
    }
    (config_root / ".claude.json").write_text(json.dumps(state, indent=2))


def command(program: Path) -> str:
    """A teammate command that runs `program` offline (for ``--teammate-command``)."""
    settings = " ".join(f"{k}={shlex.quote(v)}" for k, v in OFFLINE_ENV.items())
    return f"env {settings} {shlex.quote(str(program))}"


# the scripted model

# (a text the message holds, the turn, or the turns one after another, to answer with)
Rule = tuple[str, Callable[[str], Turn | list[Turn]]]


def teammate_messages(body: dict[str, Any]) -> list[str]:
    """The texts of the ``<teammate-message>`` blocks in the newest user message; without
    any (a prompt typed into a Claude Code lead) its whole text."""
    joined = last_user_text(body)
    found = re.findall(r"<teammate-message[^>]*>\n(.*?)\n</teammate-message>", joined, re.S)
    return found or [joined]


def newest_message(body: dict[str, Any]) -> dict[str, Any]:
    """The newest message of a request that is not a ``system``-role one: Claude Code 2.1.330
    and later may end a request with one (today's date), after the last user message."""
    messages = [m for m in body.get("messages") or [] if m.get("role") != "system"]
    return messages[-1] if messages else {}


def last_user_text(body: dict[str, Any]) -> str:
    """The text blocks of the newest message in a request, joined by newlines."""
    content = newest_message(body).get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def answers_tool_results(body: dict[str, Any]) -> bool:
    content = newest_message(body).get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


def reacting(rules: list[Rule], seen: list[str] | None = None) -> Callable[[dict[str, Any]], Turn]:
    """A model that answers each new teammate message with the first rule whose text it holds
    (else a short acknowledgement), and answers Claude Code's side calls (no tools offered)
    with a title. A rule may give a list of turns: the first answers the message, the next
    ones answer the tool results in turn; when none is left the turn ends. Messages go to
    `seen`."""
    queued: list[Turn] = []

    def play(body: dict[str, Any]) -> Turn:
        if not body.get("tools"):
            return Turn.text('{"title": "Scripted teammate"}')
        if answers_tool_results(body):
            return queued.pop(0) if queued else Turn.text("Done.")
        for text in teammate_messages(body):
            if seen is not None:
                seen.append(text)
            for needle, answer in rules:
                if needle in text:
                    turns = answer(text)
                    if isinstance(turns, Turn):
                        return turns
                    queued[:] = turns[1:]
                    return turns[0]
        return Turn.text("Noted.")

    return play


def without_reminders(text: str) -> str:
    """`text` without the ``<system-reminder>`` blocks Claude Code 2.1.330 appends to tool
    results and messages (token counts, the date)."""
    return re.sub(r"\s*<system-reminder>.*?</system-reminder>", "", text, flags=re.S).rstrip()


def protocol_json(text: str) -> dict[str, Any]:
    """The protocol message at the start of what the model saw: Claude Code 2.1.178 and later
    follow it with an instruction paragraph, so compare by meaning, not by the exact text."""
    message, _ = json.JSONDecoder().raw_decode(text.lstrip())
    assert isinstance(message, dict), text
    return message


def approve_shutdown(text: str) -> Turn:
    """Claude Code's way to approve a ``shutdown_request`` (its SendMessage tool's own words)."""
    request = protocol_json(text)
    return Turn.tool(
        "SendMessage",
        {
            "to": "team-lead",
            "message": {
                "type": "shutdown_response",
                "request_id": request["requestId"],
                "approve": True,
            },
        },
    )
