"""Permission requests on every store: a request waits for a person, exactly one answer wins,
the answer carries what the person changed, and old answers are cleaned."""

from __future__ import annotations

import threading

import pytest
from helpers import DEADLINE_S

from protocols.errors import ProtocolsError
from protocols.paths import TeamPaths
from protocols.store.contract import PermissionsContract, StoreContract
from protocols.store.selection import open_store


def new_request(permissions: PermissionsContract) -> str:
    request = permissions.new_request(
        worker_name="alice",
        worker_color="blue",
        tool_name="Bash",
        tool_use_id="toolu_1",
        description="Run the tests",
        input={"command": "pytest -q $(id) 'x'"},
    )
    return request.id


def test_a_request_waits_until_one_answer_resolves_it(store: StoreContract) -> None:
    permissions = store.permissions()
    request_id = new_request(permissions)
    assert request_id.startswith("perm-") and permissions.poll(request_id) is None
    (pending,) = permissions.pending()
    assert (pending.workerName, pending.toolName) == ("alice", "Bash")
    assert pending.input == {"command": "pytest -q $(id) 'x'"}
    permissions.resolve(request_id, approved=False, feedback="not now", resolved_by="leader")
    assert permissions.pending() == []
    resolution = permissions.poll(request_id)
    assert resolution is not None and resolution.status == "rejected"
    assert resolution.feedback == "not now" and resolution.resolvedBy == "leader"
    with pytest.raises(ProtocolsError, match=r"already answered \(rejected by leader\)"):
        permissions.resolve(request_id, approved=True)
    with pytest.raises(ProtocolsError, match="no pending permission request"):
        permissions.resolve("perm-1-nothing", approved=True)


def test_an_approval_carries_the_edited_input(store: StoreContract) -> None:
    permissions = store.permissions()
    request_id = new_request(permissions)
    permissions.resolve(request_id, approved=True, updated_input={"command": "pytest -x"})
    resolution = permissions.poll(request_id)
    assert resolution is not None and resolution.updatedInput == {"command": "pytest -x"}
    assert [r.id for r in permissions.resolved()] == [request_id]
    assert permissions.clean_resolved() == []  # an hour has not passed


def test_of_many_people_answering_at_once_one_wins(
    store: StoreContract, store_paths: TeamPaths
) -> None:
    request_id = new_request(store.permissions())
    won: list[bool] = []
    lock = threading.Lock()

    def answer(n: int) -> None:
        own = open_store(store_paths)  # an answer of its own, as another process's
        try:
            own.permissions().resolve(request_id, approved=n % 2 == 0, resolved_by=f"p{n}")
            result = True
        except ProtocolsError:
            result = False
        finally:
            own.close_thread_connection()
        with lock:
            won.append(result)

    threads = [threading.Thread(target=answer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_S)
    assert sorted(won) == [False] * 5 + [True]
    resolution = store.permissions().poll(request_id)
    assert resolution is not None and resolution.resolvedBy.startswith("p")
