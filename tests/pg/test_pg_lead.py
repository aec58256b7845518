"""`swarm lead` on a PostgreSQL team with hosts: which host takes the lead's next teammate, what
`swarm lead --host` refuses, and what the lead's spawn on a host refuses or says. The six classic
scenarios run on a PostgreSQL team with teammates on two hosts in
tests/processes/test_scenarios.py; these are the rules around them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import swarm, wait_for
from machines import HostAgent, machine, serve, stop

from protocols.paths import TeamPaths
from protocols.pg import Database, Leases, PgTeamFile
from protocols.pg.hosts import Hosts
from protocols.pids import pid_alive
from protocols.store.selection import locate, open_store
from swarm.hosts.placement import choose_host
from swarm.lead.tools import LeadLink, spawn_teammate
from swarm.team.liveness import HOST_KEY
from teammate.tools.agents import AgentCall
from teammate.tools.base import ToolError


@pytest.fixture
def paths(url: str, config_root: Path) -> TeamPaths:
    return locate("t", config_root, url)


@pytest.fixture
def hosts(db: Database, paths: TeamPaths, tmp_path: Path) -> Hosts:
    """Team t in the store, and hosts a, b and c registered (no agent runs them)."""
    PgTeamFile(db, "t").create(description="hosts", cwd=tmp_path)
    found = Hosts(db, "t")
    for name in ("a", "b", "c"):
        found.register(name, {"machine": name}, 60.0)
    return found


def on(db: Database, host: str, *names: str) -> None:
    for name in names:  # recorded as that host's, as its agent records them
        PgTeamFile(db, "t").add_member(name, cwd=Path("/"), **{HOST_KEY: host})


def test_the_next_teammate_goes_to_the_live_host_with_the_fewest_live_members(
    db: Database, paths: TeamPaths, hosts: Hosts
) -> None:
    assert choose_host(paths, ["a", "b"]) == "a"  # a tie: the first given
    assert choose_host(paths, ["b", "a"]) == "b"
    on(db, "a", "alice")
    assert choose_host(paths, ["a", "b"]) == "b"
    on(db, "b", "bob")
    on(db, "c", "cid", "dan")  # not one of the lead's hosts: c's members do not count
    assert choose_host(paths, ["a", "b"]) == "a"
    on(db, "a", "eve")
    assert choose_host(paths, ["a", "b"]) == "b"
    Leases(db, "t").end("alice", "test")  # a dead member no longer counts
    Leases(db, "t").end("eve", "test")
    assert choose_host(paths, ["a", "b"]) == "a"
    hosts.leave("a")  # a host that is not alive is passed over
    assert choose_host(paths, ["a", "b"]) == "b"
    hosts.leave("b")
    with pytest.raises(Exception, match=r"none of the lead's hosts is alive \(a, b\)"):
        choose_host(paths, ["a", "b"])


def test_swarm_lead_refuses_hosts_for_a_team_in_files_and_a_host_that_is_not_alive(
    db: Database, paths: TeamPaths, hosts: Hosts, config_root: Path
) -> None:
    files = swarm("lead", "--team", "f", "--create", "--host", "a")
    assert files.returncode == 1
    assert "swarm lead --host needs a team on PostgreSQL" in files.stderr, files.stderr
    assert not TeamPaths(config_root, "f").config.exists()  # refused before it was made
    hosts.leave("b")
    assert paths.store is not None
    for host, why in (("b", "is not alive"), ("z", "has never served this team")):
        refused = swarm("lead", "--store", paths.store, "--host", "a", "--host", host)
        assert refused.returncode == 1
        assert f"host {host!r} {why}" in refused.stderr, refused.stderr
        assert "live hosts: a, c (start one there: swarm host serve" in refused.stderr
    new = swarm("lead", "--team", "n", "--create", "--store", paths.store, "--host", "a")
    assert new.returncode == 1 and "host 'a' has never served this team" in new.stderr
    assert not open_store(locate("n", config_root, paths.store)).team_exists()  # not made


def test_a_worktree_is_refused_on_a_host_and_nothing_is_asked_of_it(
    db: Database, paths: TeamPaths, hosts: Hosts, tmp_path: Path
) -> None:
    link = LeadLink(paths, tmp_path, backend="subprocess", model="shell", hosts=("a",))
    call = AgentCall("d", "p", name="alice", isolation="worktree")
    with pytest.raises(ToolError, match=r"isolation: worktree is not available .* on a host"):
        spawn_teammate(link, call)
    assert hosts.pending("a") == []
    assert [m.name for m in PgTeamFile(db, "t").load().members] == ["team-lead"]


@pytest.fixture
def host_b(url: str, tmp_path: Path, db: Database) -> Iterator[HostAgent]:
    """Team t, and a `swarm host serve` agent b on a machine of its own, which looks at its
    teammates only when a request wakes it (its rescan an hour away)."""
    PgTeamFile(db, "t").create(description="hosts", cwd=tmp_path)
    agent = serve(machine(tmp_path, "b", url), "b", rescan_s=3600)
    try:
        wait_for(lambda: Hosts(db, "t").alive().get("b"), "host b to serve")
        yield agent
    finally:
        stop(agent)


def test_a_teammate_declared_dead_on_a_host_is_spawned_there_afresh_its_old_process_stopped(
    db: Database, paths: TeamPaths, host_b: HostAgent, workdir: Path
) -> None:
    link = LeadLink(paths, workdir, backend="subprocess", model="shell")
    first = spawn_teammate(link, AgentCall("d", "work the board", name="w1", host="b"))
    assert first.startswith("Spawned successfully.\nagent_id: w1@t\nname: w1\n"), first
    assert "host: b\n" in first and "starts afresh" not in first
    again = AgentCall("d", "work the board", name="w1", host="b")
    with pytest.raises(Exception, match="'w1' is still running on host b"):
        spawn_teammate(link, again)  # judged by its lease, not by a pid here
    spawned = Hosts(db, "t").last_spawn("w1")
    assert spawned is not None and spawned.outcome is not None
    old = int(spawned.outcome["pid"])
    # declared dead (its lease ran out, say) while its process still runs, and before its
    # host looked: the spawn reaps the entry, and the host stops the old process first
    Leases(db, "t").end("w1", "test: declared dead")
    assert pid_alive(old)
    second = spawn_teammate(link, again)
    assert "host: b\n" in second and "on a host it starts afresh" in second, second
    wait_for(lambda: not pid_alive(old), "host b to stop the old w1")
    store = open_store(paths)
    [w1] = [m for m in store.team_file().load().members if m.name == "w1"]
    assert (w1.model_extra or {})[HOST_KEY] == "b" and w1.model_extra["pid"] != old
    wait_for(lambda: Leases(db, "t").view()["w1"].left_s, "the new w1 to heartbeat")
    assert Leases(db, "t").view()["w1"].alive
    assert Hosts(db, "t").get(spawned.id).exited is not None  # the old one's exit recorded
