"""What the skills catalogue adds to an agent's prompt, against putting the skills' bodies in
it (the one-level design the catalogue avoids), measured on the real request a teammate builds.

A temporary project gets `--skills` skills (``.claude/skills/<name>/SKILL.md``, each with a
one-line description, a when-to-use line and a body of `--body-lines` lines). A Claude brain
(``teammate.brains.claude.ClaudeBrain``, the teammate's own, on a scripted model) builds its
first request three ways: without skills (baseline), with the skills (catalogue plus the Skill
tool's schema), and with every body preloaded (a definition's ``skills:`` listing them all).
Sizes are in characters and estimated tokens (4 characters a token, as the loop's own
estimate). The last line is ``key=value`` pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def request_size(project: Path, root: Path, preload: tuple[str, ...]) -> int:
    from protocols.paths import TeamPaths
    from teammate.api.model import ScriptedModel
    from teammate.brains.claude import ClaudeBrain
    from teammate.config.definitions import AgentDefinition

    agent = AgentDefinition("worker", "works", "You work.", skills=preload)
    brain = ClaudeBrain(ScriptedModel([]), agent, "alice", TeamPaths(root, "t"), project)
    request = brain.loop.request()
    return len(json.dumps(request.system)) + len(json.dumps(request.tools))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=20)
    parser.add_argument("--body-lines", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root, bare, project = Path(tmp, "config"), Path(tmp, "bare"), Path(tmp, "project")
        for directory in (root, bare, project):
            directory.mkdir()
        os.environ["CLAUDE_CONFIG_DIR"] = str(root)
        names = []
        for i in range(args.skills):
            name = f"skill-{i:02d}"
            names.append(name)
            folder = project / ".claude" / "skills" / name
            folder.mkdir(parents=True)
            body = "\n".join(
                f"Step {n}: check the {name} part of the job carefully and write down what you "
                "found before going on."
                for n in range(args.body_lines)
            )
            folder.joinpath("SKILL.md").write_text(
                f"---\nname: {name}\ndescription: Handles job {i} of the release checklist\n"
                f"when_to_use: when the task mentions job {i}\n---\n{body}\n"
            )
        baseline = request_size(bare, root, ())
        catalogue = request_size(project, root, ()) - baseline
        preloaded = request_size(project, root, tuple(names)) - baseline
    print(f"{args.skills} skills, bodies of {args.body_lines} lines each")
    print(f"  catalogue + Skill tool: {catalogue:,} characters, about {catalogue // 4:,} tokens")
    print(f"  baseline, every body preloaded: {preloaded:,} characters, ~{preloaded // 4:,} tokens")
    print(f"  (the prompt without skills: {baseline:,} characters)")
    print(
        f"skills={args.skills} catalogue_tokens={catalogue // 4} preloaded_tokens={preloaded // 4} "
        f"base_tokens={baseline // 4}"
    )


if __name__ == "__main__":
    main()
