"""The bridge's tasks: a PostgreSQL team's board and this host's task files, in step.

A task has the same id on both sides. The bridge keeps, in ``teams/<team>/swarm-bridge.json``,
each task as both sides last agreed on it (the base), and on each pass compares the file (F),
the store (P) and the base (B) of every id:

- F equals P: they agree; the base becomes that;
- only P changed (F equals B): the store's task is written into the file (or the file removed);
- only F changed (P equals B): what Claude Code did is done on the store: a new file is created
  there (with a key of its own, so a creation done again is one); a claim (pending and unowned
  on the store, in progress and owned in the file) is the store's ``claim``, so of a claim on
  this host and one elsewhere exactly one wins; a completion by the store's owner is the
  store's ``complete`` with that claim's epoch; other fields are an ``update``, a dependency
  added or removed in ``blockedBy`` is added or removed there; a removed file deletes the
  task. Then the store's task is written back into the file;
- both changed: the store wins, and its task is written into the file.

A task created in the file gets the store's next id. When that is not the file's id (a task
was created on the store under that id meanwhile: no base, another subject), the store's task
goes to that id's file, the new task to the file of its store id, and a warning says so.

The base is written after each pass, so a bridge killed in between finds the two sides equal
(or one changed) and does nothing twice: every step above is safe to do again.
"""

from __future__ import annotations

import copy
import json
import logging
import secrets
from typing import Any

from protocols.errors import Error
from protocols.fs import safefs
from protocols.fs.jsonio import atomic_write_text, ensure_file, write_json
from protocols.fs.locks import FileGuard
from protocols.paths import TeamPaths
from protocols.pg.tasks import PgTaskBoard
from protocols.tasks.board import NewTask, TaskBoard
from protocols.tasks.model import Task

log = logging.getLogger(__name__)

STATE = "swarm-bridge.json"
FIELDS = ("subject", "description", "activeForm", "status", "owner")

Doc = dict[str, Any]


class TaskSync:
    """Keeps the task files under `paths` and the board `pg` in step (module doc)."""

    def __init__(self, paths: TeamPaths, pg: PgTaskBoard) -> None:
        self.paths = paths
        self.files = TaskBoard(paths)
        self.pg = pg
        self.state_path = paths.team_dir / STATE
        self.state = self._load_state()

    def _load_state(self) -> Doc:
        try:
            state = json.loads(safefs.read_text(self.state_path))
        except FileNotFoundError:
            state = None
        except (OSError, ValueError) as exc:
            log.warning("bridge: %s cannot be read (%s); starting afresh", self.state_path, exc)
            state = None
        if not isinstance(state, dict) or not isinstance(state.get("tasks"), dict):
            state = {"key": secrets.token_hex(8), "tasks": {}}
        return state

    def _save_state(self) -> None:
        safefs.makedirs(self.state_path.parent)
        write_json(self.state_path, self.state)

    def sync(self) -> int:
        """One pass over every task id; returns how many tasks changed on either side."""
        files = {t.id: t.to_json_dict() for t in self.files.list(include_internal=True)}
        store = {t.id: t.to_json_dict() for t in self.pg.list(include_internal=True)}
        base: dict[str, Doc] = self.state["tasks"]
        agreed = copy.deepcopy(base)
        changed = 0
        for task_id in sorted(set(files) | set(store) | set(base), key=int):
            f, p, b = files.get(task_id), store.get(task_id), base.get(task_id)
            if f is None and safefs.exists(self.paths.task(task_id)):
                continue  # there but unreadable (being written in place): not a deletion
            try:
                if f == p:
                    pass
                elif f == b:
                    self._write_file(task_id, p)
                    changed += 1
                elif p == b:
                    p = self._push(task_id, f, p)
                    self._write_file(task_id, p)
                    changed += 1
                elif f is not None and _collided(f, p, b):
                    p = self._create(task_id, f)
                    self._write_file(task_id, p)
                    changed += 1
                else:
                    log.warning("bridge: task #%s changed on both sides; the store's wins", task_id)
                    self._write_file(task_id, p)
                    changed += 1
            except Error as exc:  # the next pass tries again; the others go on
                log.warning("bridge: task #%s: %s", task_id, exc)
                continue
            if p is None:
                base.pop(task_id, None)
            else:
                base[task_id] = p
        if base != agreed:
            self._save_state()
        return changed

    # files -> store

    def _push(self, task_id: str, f: Doc | None, p: Doc | None) -> Doc | None:
        """Do on the store what was done to the file; returns the store's task after it."""
        if f is None:
            if p is not None:
                self.pg.delete(task_id)
            return None
        if p is None:
            return self._create(task_id, f)
        owner, status = f.get("owner"), f.get("status")
        if owner and not p.get("owner") and p["status"] == "pending" and status != "pending":
            claim = self.pg.claim(task_id, owner, check_busy=False)
            if not claim.success:
                log.warning("bridge: %s's claim of task #%s lost: %s", owner, task_id, claim.reason)
                return _doc(self.pg.require(task_id))
        elif (
            status == "completed"
            and p["status"] == "in_progress"
            and owner
            and owner == p.get("owner")
        ):
            self.pg.complete(task_id, owner, self.pg.epoch(task_id))
        now = _doc(self.pg.require(task_id))
        fields: Doc = {k: f.get(k) for k in FIELDS if f.get(k) != now.get(k)}
        metadata = _metadata_changes(now.get("metadata"), f.get("metadata"))
        if metadata:
            fields["metadata"] = metadata
        removed = [x for x in now.get("blockedBy", []) if x not in f.get("blockedBy", [])]
        if removed:
            now = _doc(self.pg.unlink(task_id, removed))
        added = [x for x in f.get("blockedBy", []) if x not in now.get("blockedBy", [])]
        if added:
            fields["addBlockedBy"] = added
        if fields:
            self.pg.update(task_id, **fields)
            now = _doc(self.pg.require(task_id))
        return now

    def _create(self, task_id: str, f: Doc) -> Doc | None:
        spec = NewTask(
            f["subject"],
            f.get("description", ""),
            f.get("activeForm"),
            f.get("metadata"),
            tuple(f.get("blockedBy", [])),
            owner=f.get("owner"),
        )
        made = self.pg.create_many([spec], key=f"bridge-{self.state['key']}-{task_id}")[0]
        if f.get("status", "pending") != "pending":
            self.pg.update(made.id, status=f["status"])
        now = _doc(self.pg.require(made.id))
        if made.id != task_id:
            log.warning(
                "bridge: task #%s made on this host is #%s on the store (its id was taken there)",
                task_id,
                made.id,
            )
            self._write_file(made.id, now)
            self.state["tasks"][made.id] = now
            theirs = self.pg.get(task_id)
            return _doc(theirs) if theirs is not None else None
        return now

    # store -> files

    def _write_file(self, task_id: str, doc: Doc | None) -> None:
        """The file of `task_id` made to hold `doc` (removed for None), under Claude Code's
        locks, atomically; the high-water mark raised to the id."""
        path = self.paths.task(task_id)
        safefs.makedirs(self.paths.tasks_dir)
        ensure_file(self.paths.tasks_lock_target, "")
        with FileGuard(self.paths.tasks_lock_target):
            if safefs.exists(path):
                with FileGuard(path):
                    if doc is None:
                        safefs.unlink(path)
                    else:
                        write_json(path, doc)
            elif doc is not None:
                write_json(path, doc)
            self._raise_highwatermark(int(task_id))

    def _raise_highwatermark(self, value: int) -> None:
        try:
            mark = int(safefs.read_text(self.paths.highwatermark).strip() or 0)
        except (FileNotFoundError, ValueError):
            mark = 0
        if value > mark:
            atomic_write_text(self.paths.highwatermark, str(value))


def _collided(f: Doc, p: Doc | None, b: Doc | None) -> bool:
    """Whether the file and the store each made a different task under one new id (no base,
    other subjects); with the same subject it is one task whose base was lost."""
    return b is None and p is not None and f["subject"] != p["subject"]


def _doc(task: Task) -> Doc:
    return task.to_json_dict()


def _metadata_changes(before: Doc | None, after: Doc | None) -> Doc:
    """The ``metadata`` argument of an update that turns `before` into `after` (None removes)."""
    before, after = before or {}, after or {}
    changes: Doc = {k: v for k, v in after.items() if before.get(k) != v}
    changes.update({k: None for k in before if k not in after})
    return changes
