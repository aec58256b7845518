"""A task board on every store: dependencies on both sides and no cycles, ids never reused,
claims with typed failures, auto-claim of the lowest open task a member may take, failures,
retries and releases, the owner told, and any text given back exactly."""

from __future__ import annotations

import pytest

from protocols.errors import InvalidName, InvalidTaskUpdate, TaskNotFound
from protocols.messages.models import TaskAssignment
from protocols.store.contract import StoreContract
from protocols.tasks.board import NewTask
from protocols.tasks.task import ClaimFailure
from teammate.board_watch import labels_of

SHELL = labels_of("shell", None)
SCRIPTED = labels_of("scripted", "reviewer")


def test_dependencies_are_recorded_on_both_sides_and_a_cycle_is_refused(
    store: StoreContract,
) -> None:
    board = store.task_board()
    made = board.create_many([NewTask("a"), NewTask("b", after=(0,)), NewTask("c", after=(1,))])
    assert [t.blockedBy for t in made] == [[], ["1"], ["2"]]
    assert [t.blocks for t in made] == [["2"], ["3"], []]
    with pytest.raises(InvalidTaskUpdate, match="dependency cycle: #1 waits for #3"):
        board.update("1", addBlockedBy=["3"])
    with pytest.raises(InvalidTaskUpdate, match="dependency cycle"):
        board.create_many([NewTask("x", after=(1,)), NewTask("y", after=(0,))])
    with pytest.raises(TaskNotFound):
        board.create("d", blocked_by=["99"])
    assert board.task_ids() == [1, 2, 3]  # nothing of the refused batches was made


def test_bad_updates_are_refused(store: StoreContract) -> None:
    board = store.task_board()
    task = board.create("t")
    with pytest.raises(InvalidTaskUpdate, match="allowed: pending, in_progress, completed"):
        board.update(task.id, status="done")
    with pytest.raises(InvalidTaskUpdate, match="cannot block or be blocked by itself"):
        board.update(task.id, addBlocks=[task.id])
    with pytest.raises(TaskNotFound):
        board.update(task.id, addBlockedBy=["99"])
    with pytest.raises(TaskNotFound):
        board.update("99", status="completed")
    assert board.get("-1") is None and board.get("99") is None and board.get("abc") is None
    for unsafe in ("../1", "a/b", "", "."):  # could name no task file: refused on every store
        with pytest.raises(InvalidName, match="task id"):
            board.get(unsafe)


def test_unknown_update_fields_go_under_metadata_and_none_removes(store: StoreContract) -> None:
    board = store.task_board()
    task = board.create("t", metadata={"keep": 1, "drop": 2})
    board.update(task.id, extra="goes under metadata", metadata={"drop": None})
    assert board.require(task.id).metadata == {"keep": 1, "extra": "goes under metadata"}
    assert board.task_metadata(task.id) == {"keep": 1, "extra": "goes under metadata"}
    assert board.task_metadata("99") is None


def test_deleted_ids_are_never_reused_and_references_are_removed(store: StoreContract) -> None:
    board = store.task_board()
    first, second, third = (board.create(s) for s in ("a", "b", "c"))
    board.update(second.id, addBlockedBy=[first.id], addBlocks=[third.id])
    assert board.update(third.id, status="deleted") is None
    assert board.get(third.id) is None
    assert board.require(second.id).blocks == []
    assert board.create("d").id == "4"
    assert board.delete("1")
    assert board.require(second.id).blockedBy == []  # a deleted blocker no longer blocks
    assert board.create("e").id == "5"


def test_listings_hide_internal_tasks_unless_asked(store: StoreContract) -> None:
    board = store.task_board()
    board.create("seen")
    board.create("hidden", metadata={"_internal": True})
    assert [t.subject for t in board.list()] == ["seen"]
    assert [t.subject for t in board.list(include_internal=True)] == ["seen", "hidden"]
    assert [t.subject for t in board.rows()] == ["seen"]
    assert [t.id for t in board.rows(include_internal=True)] == ["1", "2"]


def test_claim_failures_have_typed_reasons(store: StoreContract) -> None:
    board = store.task_board()
    a, b = board.create("a"), board.create("b")
    board.update(b.id, addBlockedBy=[a.id])
    assert board.claim("42", "alice").reason is ClaimFailure.TASK_NOT_FOUND
    blocked = board.claim(b.id, "alice")
    assert blocked.reason is ClaimFailure.BLOCKED and blocked.blocked_by == [a.id]
    claimed = board.claim(a.id, "alice")
    assert claimed.success and claimed.task is not None
    assert (claimed.task.owner, claimed.task.status) == ("alice", "in_progress")
    assert board.claim(a.id, "alice").success  # claiming your own task again is fine
    assert board.claim(a.id, "bob").reason is ClaimFailure.ALREADY_CLAIMED
    c = board.create("c")
    busy = board.claim(c.id, "alice")
    assert busy.reason is ClaimFailure.AGENT_BUSY and busy.busy_with == [a.id]
    board.update(a.id, status="completed")
    assert board.claim(a.id, "bob").reason is ClaimFailure.ALREADY_RESOLVED
    assert board.claim(b.id, "alice").success  # the blocker is done and alice is free


def test_claim_next_takes_the_lowest_open_unblocked_unowned_task(store: StoreContract) -> None:
    board = store.task_board()
    first = board.create("first")
    blocked = board.create("blocked", blocked_by=[first.id])
    board.create("internal", metadata={"_internal": True})
    owned = board.create("owned", owner="carol")
    free = board.create("free")
    took = board.claim_next("alice")
    assert took is not None and took.task is not None and took.task.id == first.id
    took = board.claim_next("bob")
    assert took is not None and took.task is not None and took.task.id == free.id
    assert board.claim_next("dave") is None  # only blocked, internal and owned tasks left
    board.create("another")
    took = board.claim_next("bob")
    assert took is not None and took.reason is ClaimFailure.AGENT_BUSY
    assert took.busy_with == [free.id]
    board.update(first.id, status="completed")
    took = board.claim_next("dave")
    assert took is not None and took.task is not None and took.task.id == blocked.id
    assert board.require(owned.id).status == "pending"


def test_release_all_returns_unfinished_tasks_to_pending(store: StoreContract) -> None:
    board = store.task_board()
    a, b, c = (board.create(s) for s in "abc")
    board.claim(a.id, "alice")
    board.update(b.id, owner="alice", status="completed")
    board.update(c.id, owner="bob")
    released = board.release_all("alice")
    assert [t.id for t in released] == [a.id]
    assert board.require(a.id).owner is None and board.require(a.id).status == "pending"
    assert board.require(b.id).owner == "alice"
    assert board.require(c.id).owner == "bob"


def test_an_owner_change_sends_task_assignment_to_the_new_owner(store: StoreContract) -> None:
    mailbox = store.mailbox()
    board = store.task_board(mailbox)
    task = board.create("Write schema.sql", "users table")
    board.update(task.id, owner="alice", actor="team-lead")
    (entry,) = mailbox.read_unread("alice")
    message = entry.structured()
    assert isinstance(message, TaskAssignment)
    assert (message.taskId, message.subject, message.assignedBy) == (
        task.id,
        "Write schema.sql",
        "team-lead",
    )
    board.update(task.id, owner="alice", actor="team-lead")  # no change, no message
    board.update(task.id, owner="bob", actor="bob")  # taking it yourself needs no message
    assert len(mailbox.read_unread("alice")) == 1
    assert mailbox.read_unread("bob") == []


def test_the_board_gives_each_member_what_it_may_take(store: StoreContract) -> None:
    board = store.task_board()
    board.create_many(
        [
            NewTask("build", metadata={"command": "make"}),
            NewTask("review", metadata={"for": ["claude"]}),
            NewTask("deploy", metadata={"command": "make deploy", "for": "carol"}),
            NewTask("anyone"),
        ]
    )
    got = board.claim_next("sam", labels=SCRIPTED)
    assert got is not None and got.task is not None and got.task.subject == "review"
    got = board.claim_next("alice", labels=SHELL)
    assert got is not None and got.task is not None and got.task.subject == "build"
    got = board.claim_next("bob", labels=SHELL)  # deploy is carol's
    assert got is not None and got.task is not None and got.task.subject == "anyone"
    got = board.claim_next("carol", labels=SHELL)
    assert got is not None and got.task is not None and got.task.subject == "deploy"


def test_a_failed_task_retried_goes_to_someone_else(store: StoreContract) -> None:
    board = store.task_board()
    task = board.create("flaky", metadata={"command": "false"})
    claimed = board.claim_next("alice", labels=SHELL)
    assert claimed is not None and claimed.success
    failed = board.fail(task.id, "exit code 1", by="alice")
    assert failed.failed and failed.owner == "alice"
    assert board.claim_next("bob", labels=SHELL) is None  # failed: nobody takes it
    board.retry(task.id)
    assert board.require(task.id).metadata == {"command": "false", "failedBy": ["alice"]}
    assert board.claim_next("alice", labels=SHELL) is None  # not alice again, by itself
    unfiltered = board.claim_next("alice")  # a caller that gives no labels: no filtering
    assert unfiltered is not None and unfiltered.success
    board.retry(task.id)
    again = board.claim_next("bob", labels=SHELL)
    assert again is not None and again.task is not None and again.task.owner == "bob"
    board.fail(task.id, "exit code 1", by="bob")
    board.retry(task.id)
    assert board.claim(task.id, "alice").success  # a claim by name is not filtered
    assert board.require(task.id).metadata["failedBy"] == ["alice", "bob"]


@pytest.mark.parametrize(
    "subject",
    ['it\'s "$(rm -rf ~)" `x` ; DROP TABLE tasks; --', "two\nlines\r\n", "日本語 🙂 \u202e \x07"],
)
def test_hostile_task_text_comes_back_exactly(store: StoreContract, subject: str) -> None:
    board = store.task_board()
    task = board.create(subject, subject * 3, metadata={"note": subject + "\x00"})
    got = board.require(task.id)
    assert (got.subject, got.description) == (subject, subject * 3)
    assert got.metadata == {"note": subject + "\x00"}
