"""The teammate's life: WORK -> IDLE -> SHUTDOWN, driven by its inbox and the task board.

Each step reads the inbox first (a live ``shutdown_request`` before anything else), answers the
other messages, then works: a task assigned to it, else the lowest claimable task on the board
(`TaskBoard.claim_next`). When a turn ends it tells the lead (``idle_notification``) and marks
itself inactive. Idle, it sleeps on inotify for its inbox and the task directory (with the
watcher's periodic rescan as a safety net); it makes no model calls, and it looks at the board
only when the board changed (an inotify event, or the directory's time), a message came, or
every ten minutes: so idling costs the same whatever the board holds.

What it obeys, and from whom (its protocol messages are handled by `teammate.control`): a
``shutdown_request``, ``mode_set_request`` or ``team_permission_update`` counts only from the lead
(the entry's sender and the message's own ``from``); one from anybody else is reported to the lead
and ignored. Started with ``--lead-verify-key``, it checks every entry
(`protocols.team.signing.Verifier`): one that claims a lead name, or asks for a shutdown, without
the lead's signature is *forged*: never obeyed (its protocol message reported to the lead), shown to
a Claude model with ``verified="false"``, and a permission answer or plan verdict of that kind
leaves the request waiting. A ``shutdown_request`` sent before this teammate joined (``joinedAt``)
was meant for a predecessor of the same name: it is ignored and reported, never obeyed.

What it survives: a pass of the loop that fails (a lock that stays taken, a ``config.json``
being rewritten or broken, a full disk, a planted link, a message or task file it cannot use) is
reported to the lead once and retried with back-off (`teammate.trouble`); a message that makes
its own handling fail is set aside (marked read, reported) so it cannot fail the teammate again;
a task whose work fails or stops is marked failed (`TaskBoard.fail`) and the worker goes on with
the next one; a task whose outcome cannot be written yet keeps it and writes it later, never
doing the work twice. When it stops, every process it started (they carry its
``SWARM_PROCESS_TOKEN``) is stopped too.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from protocols.clock import now_iso, now_ms
from protocols.errors import (
    ProtocolsError,
    StaleClaim,
    StoreTimeout,
    StoreUnavailable,
    UnknownMember,
)
from protocols.inbox.entry import InboxEntry
from protocols.member.budget import budgets_dir
from protocols.messages.models import (
    IdleNotification,
)
from protocols.names import LEAD_NAME
from protocols.paths import TeamPaths
from protocols.pids import stop_carriers
from protocols.printable import printable
from protocols.store.selection import open_store
from protocols.tasks.model import Task
from protocols.team.model import Member
from protocols.trace_context import added_at_ms, carrier_of, telemetry_enabled
from protocols.values import MemberState
from teammate.activity import Activity
from teammate.board_watch import BoardWatch, labels_of
from teammate.brains.base import Brain
from teammate.budget import Notices
from teammate.control import MessageControl
from teammate.instance import single_instance
from teammate.lead_check import LeadCheck
from teammate.lead_requests import LeadRequests
from teammate.link import Approval, Interrupted, Outcome, PermissionAsk, PlanVerdict, Watched
from teammate.membership import await_membership, join
from teammate.options import TeammateOptions
from teammate.outbox import ENVIRONMENT_ERRORS, Outbox
from teammate.reporter import StatusReporter
from teammate.stopping import (
    SLOW_S,
    Stop,
    StopSignals,
    TeamGone,
    cut_short,
    handback_seconds,
    waiting_text,
)
from teammate.task_worktree import work_in_place
from teammate.telemetry.spans import TEAMMATE_SERVICE, respond_span
from teammate.trouble import Trouble, describe

# inotify (or the team's LISTEN channel) wakes an idle teammate; its rescan, every
# `store.idle_rescan_s`, is only a safety net, so an idle teammate sleeps. Without inotify the
# watcher polls by itself.
RETRY_S = 1.0  # while something waits in the outbox
WATCH_S = 1.0  # a wait for a model call looks at the inbox at least this often


class Teammate:
    """One teammate process: its member entry, inbox, outbox, board and brain (module doc)."""

    def __init__(
        self,
        options: TeammateOptions,
        brain: Brain,
        paths: TeamPaths,
        say: Callable[[str], None] = print,
        reporter: StatusReporter | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options
        self.name = options.agent_name
        self.color = options.color
        self.brain = brain
        self.reporter = reporter or StatusReporter(None, self.name, options.spec.model)
        self.activity = Activity(self._mark_turn)
        self.paths = paths
        self.lead_check = LeadCheck(options.lead_verify_key)  # the lead's signatures
        self.store = open_store(paths)  # files, or PostgreSQL (`protocols.store.selection`)
        self.mailbox = self.store.mailbox(on_read=self.lead_check.spend)
        self.board = self.store.task_board(self.mailbox)
        # one reader of config.json for the mailbox's member checks and its own entry: it
        # parses the file once after a change, not once per reader (200 members: ~1 ms each)
        self.team = self.mailbox.team_file()
        self._say = say
        self.member: Member | None = None
        self.stopped = False
        # installed while it runs; a signal's stop also ends the wait in progress
        self.signals = StopSignals(lambda: self.token, nudge=self._missed_news)
        self.store_silent = False  # its stop was cut short: the store did not answer
        self._watcher: Any = None  # the store's watcher: InboxWatcher, or PgWatcher
        self.board_watch = BoardWatch(
            self.board,
            self.name,
            lambda: self._watcher,
            clock,
            paths.tasks_dir,
            labels=labels_of(options.spec.model, options.spec.agent_type),
        )
        self._inbox_seen: object = None  # the inbox as it was when it held nothing new
        self._in_flight: set[str] = set()  # plain messages the brain is answering right now
        # plain messages handed to the brain between two model turns: read once the turn ends
        self._arrived: list[InboxEntry] = []
        # answered while the outbox held the answers: read once they are written (`_release`)
        self._read_after_release: list[InboxEntry] = []
        self._unrecorded: dict[str, tuple[Task, Outcome]] = {}  # done, not yet written down
        self._in_turn = False  # the brain is answering or working (its model calls may wait)
        # the lead's compaction request for an idle turn: (its entry, the instructions)
        self._compact: tuple[InboxEntry, str] | None = None
        self.trouble = Trouble()
        self.outbox = Outbox(self.mailbox, self.name, self.color, self.say)
        self.control = MessageControl(self)  # its protocol messages (`teammate.control`)
        self.requests = LeadRequests(
            name=self.name,
            color=self.color,
            paths=paths,
            mailbox=self.mailbox,
            reporter=self.reporter,
            say=self.say,
            send=self.send_message,
            answer_shutdown=self.control.answer_shutdown,
            watcher=lambda: self._watcher,
            joined_at=lambda: self.member.joinedAt if self.member is not None else 0,
            timeout_s=options.spec.permission_timeout_s,
            trusted=self.lead_check.trusted,
            set_aside=self.control.set_aside_forged,
            checks_signatures=self.lead_check.active,
        )
        self.token = ""
        self.home = Path.cwd()  # where it works, unless a task names a worktree
        self.home_confined = False  # set from the member entry: it runs in its own worktree
        self.budget = self.reporter.budget  # a Claude teammate's (`teammate.budget`)
        if self.budget is not None:
            self.budget.notices = Notices(self._budget_warn, self._budget_over, self._budget_back)

    # lifecycle

    def run(self) -> int:
        """Run until a shutdown is approved or SIGTERM arrives; returns the exit code."""
        if telemetry_enabled():  # this process's spans and metrics are a teammate's
            from teammate.telemetry import tracing

            tracing.setup(TEAMMATE_SERVICE)
        self.member = await_membership(self.team, self.name, self.trouble, self.say, self.reporter)
        self.home_confined = bool(self.member.worktreePath)
        if self.budget is not None:  # its budget file is the one `swarm budget` wrote for it
            self.budget.joined_at = self.member.joinedAt
            self.budget.waiter = self._hold
            self.budget.waiter_thread = threading.get_ident()
        with single_instance(self.paths, self.name):
            self.token = join(self.team, self.member, self.trouble, self.say)
            self.reporter.set(MemberState.IDLE, "joined the team")
            self.say(f"{self.name} joined team {self.paths.team!r} (pid {os.getpid()})")
            # SIGTERM, and SIGHUP: a pane closed under it (a Claude Code lead cleaning up its
            # panes as it exits); once stopping, a second SIGTERM ends it at once
            with self.signals:
                try:
                    with self._connected() as watcher:
                        self._watcher = watcher
                        if watcher.degraded:
                            self.tell_lead(f"{self.name}: {watcher.degraded}", "no inotify")
                        try:
                            self._loop(watcher)
                        except Stop as stop:  # hand back its tasks: a SIGKILL may follow soon
                            self._leave(stop)
                        else:
                            self._leave(None)  # an approved shutdown: its tasks went back then
                except Stop as stop:  # while its store was out of reach: it may not answer now
                    self._leave(stop)
                finally:
                    self.brain.stop()  # its background sub-agents, its MCP servers
                    stop_carriers(self.token)  # commands it started and left running
                    self.activity.close(timeout=1.0)  # a mark stuck on the store: not waited for
        return 0

    def _leave(self, stop: Stop | None) -> None:
        """The stop (`teammate.stopping`): its tasks handed back (after a signal) and its status
        written, on a thread of its own given `handback_seconds()`; a store that does not answer
        in that time cuts it short, said in the log (its lease or the lead returns the tasks)."""
        self.signals.begin()
        with contextlib.suppress(Exception):  # a transaction the signal cut short ends here
            self.store.close_thread_connection()
        why = stop.why if stop is not None else None
        seconds = handback_seconds()

        def work() -> list[Task]:
            released = self.board.release_all(self.name) if stop is not None else []
            with contextlib.suppress(Exception):
                self.activity.end()
            self.reporter.set(MemberState.STOPPED, "stopped", clear_task=True)
            return released

        def slow() -> None:
            with contextlib.suppress(OSError):  # its pane may be gone
                self.say(waiting_text(why, seconds))

        try:
            released = self.store.within(seconds, work, "handing back its tasks", (SLOW_S, slow))
        except Exception as exc:  # the store did not answer in time, or failed
            self.store_silent = True
            problem = (
                f"the store did not answer within {seconds:g} s"
                if isinstance(exc, StoreTimeout)
                else describe(exc)
            )
            with contextlib.suppress(OSError):
                self.say(cut_short(why, self.store.kind, problem, stop is not None))
            return
        if stop is not None:
            with contextlib.suppress(OSError):
                self.say(f"stopped: {why}; released {[t.id for t in released] or 'no tasks'}")

    @contextlib.contextmanager
    def _connected(self) -> Iterator[Any]:
        """Its lease (on PostgreSQL: a beat that finds news it missed wakes it) and the store's
        watcher, once they can start: a store out of reach just then (its network went down as
        it joined) is waited out and reported as in the loop, not died of."""
        while True:
            with contextlib.ExitStack() as started:
                try:
                    started.enter_context(
                        self.store.keep_alive(self.name, self.say, on_news=self._missed_news)
                    )
                    watcher = started.enter_context(
                        self.store.watcher(
                            [self.name],
                            board=True,
                            directories=(budgets_dir(self.paths),),  # a raise of its budget
                            rescan_s=self.store.idle_rescan_s,
                            subdirectories=False,  # lock directories: every claim makes some
                        )
                    )
                except (*ENVIRONMENT_ERRORS, StoreUnavailable) as exc:
                    started.close()  # what did start stops before the wait
                    delay, new = self.trouble.failed(exc)
                    self._report_trouble(exc, delay, new)
                    time.sleep(delay)
                    continue
                yield watcher
                return

    def _loop(self, watcher: Any) -> None:
        while not self.stopped:
            self.signals.check()  # a stop whose raise a finalizer swallowed (teammate.stopping)
            watcher.clear()
            try:  # a store out of reach (its network is down) is trouble too: it waits it out
                if not self._team_exists():  # TeamGone is no Exception: it ends the loop
                    raise TeamGone(f"team {self.paths.team!r} is gone (its lead ended the session)")
                busy = self.step()
            except Exception as exc:  # bad input or a failing environment
                delay, new = self.trouble.failed(exc)
                self._report_trouble(exc, delay, new)
                time.sleep(delay)
                continue
            if self.trouble.cleared():
                self.say("working again")
                self.reporter.set(activity="working again")
            if not busy:
                try:
                    watcher.wait(RETRY_S if self.outbox else self.store.idle_rescan_s)
                except StoreUnavailable as exc:  # its listener could not listen again
                    delay, new = self.trouble.failed(exc)
                    self._report_trouble(exc, delay, new)

    def _missed_news(self) -> None:
        """From another thread: the heartbeat's (the store says there is news, unread messages
        or the team or this member gone, that no notification brought) or the stop relay's (a
        signal asked for a stop): the wait in progress ends, and it looks."""
        watcher = self._watcher
        if watcher is not None:
            watcher.changed.set()

    def _report_trouble(self, exc: Exception, delay: float, new: bool) -> None:
        problem = describe(exc)
        self.say(f"problem: {problem}; trying again in {delay:g} s")
        with contextlib.suppress(Exception):
            self.reporter.set(activity=f"problem: {problem}; retrying in {delay:g} s")
        if new:
            self.tell_lead(
                f"{self.name} hit a problem and keeps trying (every {delay:g} s and longer): "
                f"{problem}",
                "a problem, retrying",
            )

    def step(self) -> bool:
        """One pass: messages first, then at most one task. True if anything happened."""
        try:
            return self._step()
        finally:
            self._release()  # what a quick turn said, if nothing sent it yet (an error)

    def _step(self) -> bool:
        self.outbox.flush(self._report_trouble)
        self._record_outcomes()
        entries = self._unread()
        plain = self.control.handle_messages(entries)
        if self.stopped:
            return True
        if self._compact is not None:
            self._compact_now()
            if self.stopped:
                return True
        noticed = not plain and self.brain.notices_waiting()
        outcome = self._respond(plain) if plain or noticed else None
        if self.stopped:
            return True
        # over budget, it takes no new task (its own stays in progress, for after a raise); a
        # turn that just went over says so in its idle notification, below
        answered = bool(plain or noticed)
        affordable = self.budget is None or self.budget.settle(announce_over=not answered)
        # a protocol message may be about the board (a task assigned by a lead that writes task
        # files in place, as Claude Code does: no doorbell rings for that); a plain one is for
        # the brain. Looking at the board costs a teammate without inotify a stat of every task
        # file, so a broadcast does not send 72 of them to look at 2,000 tasks each
        protocol = len(plain) < len(entries)
        task = (
            self.board_watch.next_task(force=protocol, skip=self._unrecorded)
            if affordable
            else None
        )
        if task is not None:
            self._release()  # its answers go out before the task's work
            self._work(task)
            return True
        if answered:
            outcome = self._before_idle() or outcome
            if self.stopped:
                return True
            self._send_idle(outcome=outcome)
        return answered

    def _before_idle(self) -> Outcome | None:
        """The brain's TeammateIdle hooks (they may send it back to work, bounded); a failure
        there is reported and the teammate goes idle anyway."""
        try:
            return self.brain.before_idle(self)
        except Interrupted:
            return None
        except Exception as exc:  # a bad hook never stops the teammate
            self.say(f"TeammateIdle hook failed: {describe(exc)}")
            return None
        finally:
            self._turn_ended()

    # messages

    def _team_exists(self) -> bool:
        return self.store.team_exists()

    def _unread(self) -> list[InboxEntry]:
        """Unread entries not already being answered; an inbox is only read again once it
        changed since it held nothing new (`unread_changed`)."""
        fresh, seen = self.mailbox.unread_changed(self.name, self._inbox_seen)
        unread = [entry for entry in fresh if entry.identity not in self._in_flight]
        self._inbox_seen = None if unread else seen
        return [self.lead_check.checked(entry) for entry in unread]

    def compact_when_it_can(self, entry: InboxEntry, instructions: str) -> None:
        """The lead asked for a compaction: before the brain's next model request if it is in a
        turn (the request is read when the turn ends), else in an idle turn of its own
        (`_compact_now`, after the other messages; the request is read once it is done)."""
        self._in_flight.add(entry.identity)  # not handled twice meanwhile
        if self._in_turn:
            self.say(self.brain.compact(instructions, self, now=False))
            self._arrived.append(entry)
        else:
            self._compact = (entry, instructions)

    def _compact_now(self) -> None:
        assert self._compact is not None
        (entry, instructions), self._compact = self._compact, None
        self._start_turn(MemberState.WORKING, "compacting its conversation")
        self._in_turn = True
        note = "compaction stopped"
        try:
            note = self.brain.compact(instructions, self, now=True)
        except Interrupted:
            return
        finally:
            self._in_turn = False
            self._turn_ended([entry])
            self.activity.end()
        self.say(note)
        self.reporter.set(MemberState.IDLE, note)

    def _respond(self, plain: list[InboxEntry]) -> Outcome | None:
        """Let the brain answer plain messages; they are marked read once it has (a crash
        before that leaves them unread: they are answered again, never lost). The model request
        goes first: ``isActive`` and the status file follow it (`_start_turn`)."""
        self._in_flight.update(entry.identity for entry in plain)
        why = f"answering {plain[-1].from_}" if plain else "taking up a sub-agent's result"
        if self.brain.quick_answers():
            # its answers go with the idle notification (`Outbox.hold`); the brain's part is
            # over at once, so it is never marked active: waiting for the lead's inbox lock
            # (200 teammates answering a broadcast) is no work, and marking it would rewrite
            # config.json twice per teammate while they all wait for locks
            self.outbox.hold()
            self.reporter.set(MemberState.WORKING, why, write=False)
        else:
            self._start_turn(MemberState.WORKING, why)
        self._in_turn = True
        try:
            with respond_span(plain, f"{self.name}@{self.paths.team}"):
                return self.brain.respond(plain, self)
        except Interrupted:
            return None
        finally:
            self._in_turn = False
            self._turn_ended(plain)

    def _turn_ended(self, answered: Sequence[InboxEntry] = ()) -> None:
        """The brain's turn is over: what it answered, and what it was handed between two of
        its model requests (`between_turns`), is in its conversation now, so it is marked read.
        A crash before this leaves them unread: taken up again after a restart, never lost."""
        arrived, self._arrived = self._arrived, []
        if self.outbox.holding:  # read once the answers are written (`_release`)
            self._read_after_release += [*answered, *arrived]
            return
        self._in_flight.clear()
        self.mailbox.mark_read(self.name, [*answered, *arrived])

    def _release(self) -> None:
        """Send what the outbox held this turn (the answers, and the idle notification if it
        was sent: one write to the lead), then mark read what they answered: a crash before
        the mark leaves the messages unread, answered again after a restart, never lost."""
        if not self.outbox.holding:
            return
        self.outbox.release()
        read, self._read_after_release = self._read_after_release, []
        self._in_flight.clear()
        self.mailbox.mark_read(self.name, read)

    def between_turns(self) -> list[InboxEntry]:
        """For the brain, between two model turns: protocol messages are handled here; the
        plain ones are returned, and marked read when the turn ends (`_turn_ended`); an
        approved shutdown raises `Interrupted`."""
        self._inbox_seen = None
        plain = self.control.handle_messages(self._unread())
        if self.stopped:
            raise Interrupted("shutdown approved")
        self._in_flight.update(entry.identity for entry in plain)  # not handed over twice
        self._arrived.extend(plain)
        return plain

    def pause(self, seconds: float, why: str) -> None:
        """For the brain, waiting before a retry (the model API is failing): shown in the status,
        and the inbox is watched meanwhile, so a shutdown is answered at once (`Interrupted`)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.reporter.set(activity=f"{why} in {left:.0f} s")
            if self._watcher is not None:
                self._watcher.clear()
            self.between_turns_protocol_only()
            waiter = self._watcher
            if waiter is not None:
                waiter.wait(min(left, 1.0))
            else:
                time.sleep(min(left, 1.0))

    def watch(self, call: Watched, why: str) -> bool:
        """For the brain, waiting for a model call in progress: protocol messages are answered
        meanwhile (a shutdown at once, by raising `Interrupted`); the call's progress wakes the
        wait as the inbox does."""
        watcher = self._watcher
        if watcher is None:
            return call.wait()
        call.on_change(watcher.changed.set)
        while True:
            watcher.clear()
            call.poll()
            if call.done:
                return True
            self._protocol_only()
            if not call.done:
                watcher.wait(WATCH_S)

    def wait_command(self, command: Watched, seconds: float, why: str) -> str:
        """For the brain, waiting for a command in the foreground: protocol messages are
        answered meanwhile (a shutdown at once, by raising `Interrupted`); a plain message
        ends the wait (``message``), so that the command goes to the background and the
        message is taken up now."""
        watcher = self._watcher
        if watcher is None:
            return "done" if command.wait(seconds) else "timeout"
        deadline = time.monotonic() + seconds
        command.on_change(watcher.changed.set)
        while True:
            watcher.clear()
            if command.done:
                return "done"
            if self._protocol_only():
                return "message"
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            watcher.wait(min(left, WATCH_S))

    def _hold(self, seconds: float) -> None:
        """Over budget (`teammate.budget`): wait up to `seconds` for a change (a raise of its
        budget wakes the watcher), answering protocol messages meanwhile (a shutdown at once,
        by raising `Interrupted`); plain messages wait for the next turn."""
        if self._watcher is not None:
            self._watcher.clear()
        self.between_turns_protocol_only()
        if self._watcher is not None:
            self._watcher.wait(seconds)
        else:
            time.sleep(seconds)

    def _budget_warn(self, text: str) -> None:
        self.say(text)
        self.tell_lead(text, "80% of its budget used")

    def _budget_over(self, reason: str) -> None:
        """Stopped before a model request: the lead hears why (a failed idle notification)."""
        self.say(f"stopped: {reason}")
        note = IdleNotification(
            from_=self.name,
            timestamp=now_iso(),
            idleReason="failed",
            summary="over budget",
            failureReason=reason,
        )
        try:
            self.send_message(LEAD_NAME, note)
        except Exception as exc:  # the lead's inbox may be what is broken
            self.say(f"could not tell the lead: {describe(exc)}")
        self.reporter.set(activity=reason)

    def _budget_back(self, text: str) -> None:
        self.say(text)
        self.tell_lead(text, "budget raised; carrying on")
        self.reporter.set(activity="budget raised; carrying on")

    def between_turns_protocol_only(self) -> None:
        """Protocol messages only (a shutdown first); plain messages wait for the next turn."""
        self._inbox_seen = None
        self._protocol_only()

    def _protocol_only(self) -> bool:
        """`between_turns_protocol_only`, reading the inbox only if it changed; True if plain
        messages wait (for the next turn)."""
        entries = self._unread()
        protocol = [e for e in entries if self.control.decode(e) is not None]
        self.control.handle_messages(protocol)
        if self.stopped:
            raise Interrupted("shutdown approved")
        return len(protocol) < len(entries)

    # tasks

    def _work(self, task: Task) -> None:
        """Work on `task`, then record the outcome (`_record`). The work is done once: if its
        outcome cannot be written yet (a full disk, a lock held too long), it is kept and written
        on a later pass, never redone."""
        self._start_turn(MemberState.WORKING, f"#{task.id}: {task.subject}", task=task.id)
        self.say(f"working on #{task.id}: {task.subject}")
        self._in_turn = True
        try:
            outcome = self._traced_work(task)
        except Interrupted:
            return
        except Exception as exc:  # a task must not take the teammate with it
            outcome = Outcome("failed", f"#{task.id} failed: {describe(exc)}")
        finally:
            self._in_turn = False
            self._turn_ended()
        if self.stopped:
            return
        self._unrecorded[task.id] = (task, outcome)
        self._record(task.id)

    def _traced_work(self, task: Task) -> Outcome:
        """The work on `task`, a span of the task's trace when telemetry is on."""
        if not telemetry_enabled():
            return work_in_place(self.brain, task, self, self.home, self.home_confined)
        from teammate.telemetry import metrics, tracing

        added = added_at_ms(task.metadata)
        if added is not None:
            metrics.claim_latency(max(0, now_ms() - added) / 1000)
        attributes = {"agent_id": f"{self.name}@{self.paths.team}", "swarm.task.id": task.id}
        carrier = carrier_of(task.metadata)
        with tracing.span("swarm task work", carrier, attributes, service=TEAMMATE_SERVICE) as s:
            outcome = work_in_place(self.brain, task, self, self.home, self.home_confined)
            s.set_attribute("swarm.task.outcome", outcome.status)
        tracing.flush()
        return outcome

    def _record_outcomes(self) -> None:
        """Write the outcomes earlier passes could not (raises while they still cannot be)."""
        for task_id in list(self._unrecorded):
            self._record(task_id)

    def _record(self, task_id: str) -> None:
        task, outcome = self._unrecorded[task_id]
        try:
            self._write_outcome(task, outcome)
        except StaleClaim as exc:  # its lease ran out meanwhile: the task is another's now
            del self._unrecorded[task_id]
            self.board_watch.forget(task.id)
            self.say(f"#{task.id}: not recorded: {exc}")
            self.tell_lead(f"{self.name}: #{task.id} was done, but {exc}", "a stale claim")
            return
        del self._unrecorded[task_id]
        self.board_watch.forget(task.id)
        self.say(outcome.summary + (f"\n{outcome.report}" if outcome.report else ""))
        if outcome.report:
            self.send_message(
                LEAD_NAME, f"{outcome.summary}\n{outcome.report}", summary=outcome.summary
            )
        self._before_idle()
        if not self.stopped:
            self._send_idle(task, outcome)

    def _write_outcome(self, task: Task, outcome: Outcome) -> None:
        """The outcome on the board; on a store that fences (PostgreSQL), under the claim's
        epoch, so a claim lost meanwhile refuses it (`StaleClaim`)."""
        fence = self.board_watch.fence(task.id)
        if outcome.status == "resolved" and not outcome.completed_by_brain:
            self.board.update(
                task.id, actor=self.name, status="completed", **fence, **outcome.metadata
            )
        elif outcome.status != "resolved" and self.board.get(task.id) is not None:
            if outcome.metadata:
                self.board.update(task.id, actor=self.name, **fence, **outcome.metadata)
            current = self.board.get(task.id)
            if current is not None and current.unfinished and current.owner == self.name:
                self.board.fail(task.id, outcome.summary, self.name)
        elif outcome.metadata and self.board.get(task.id) is not None:
            self.board.update(task.id, actor=self.name, **fence, **outcome.metadata)

    # what the brain uses (`teammate.link.TeamLink`)

    def send(self, to: str, body: Any, summary: str | None = None) -> None:
        self.send_message(to, body, summary)

    def ask_permission(self, ask: PermissionAsk) -> Approval:
        return self.requests.ask_permission(ask)

    def ask_plan_approval(self, plan: str, plan_file: str) -> PlanVerdict:
        return self.requests.ask_plan_approval(plan, plan_file)

    def wake(self) -> None:
        """A background sub-agent ended: an idle teammate's wait ends now (`step` then lets
        the brain take up its notification)."""
        watcher = self._watcher
        if watcher is not None:
            watcher.changed.set()

    # helpers

    def _send_idle(self, task: Task | None = None, outcome: Outcome | None = None) -> None:
        failed = outcome is not None and outcome.status != "resolved"
        reason = outcome.summary if outcome is not None and failed else None
        # a turn that ended over budget: this notification says so (it is not available)
        broke = self.budget.over_now() if self.budget is not None else None
        note = IdleNotification(
            from_=self.name,
            timestamp=now_iso(),
            # a failed turn that was not a task is a failed turn; a task's failure is reported
            # in completedStatus and the teammate is available for the next one
            idleReason="failed" if (failed and task is None) or broke else "available",
            summary=outcome.summary if outcome else None,
            completedTaskId=task.id if task else None,
            completedStatus=outcome.status if outcome and task else None,
            failureReason=broke or reason,
        )
        self.send_message(LEAD_NAME, note)
        self._release()  # with the turn's answers, when the outbox held them
        self.activity.end()
        self.reporter.set(
            MemberState.FAILED if failed and task is None else MemberState.IDLE,
            broke or (outcome.summary if outcome else "idle"),
            clear_task=True,
        )

    def send_message(self, to: str, body: Any, summary: str | None = None) -> None:
        self.outbox.send(to, body, summary)

    def tell_lead(self, text: str, summary: str) -> None:
        """A note for the lead that must not fail the caller (it may be what is failing)."""
        try:
            self.send_message(LEAD_NAME, text, summary=summary or None)
        except Exception as exc:  # the lead's inbox may be what is broken
            self.say(f"could not tell the lead: {describe(exc)}")

    def _start_turn(self, state: MemberState, why: str, task: str | None = None) -> None:
        """A turn starts: the status says so at once in memory; ``isActive`` in config.json
        and the status file are written only if the turn lasts (`teammate.activity`: each
        costs a lock, a rewrite or an fsync, and a quick turn's end writes the status once),
        and the wait for that starts once the brain's model request has been sent, or now for
        a brain that makes none. Only people and the lead read them; nothing waits on them,
        and a failure to write them never fails the turn."""
        self.reporter.set(state, why, task=task, write=False)
        if not self.brain.defer(self.activity.begin):
            self.activity.begin()

    def _mark_turn(self, active: bool) -> None:
        """`Activity`'s mark: a turn that lasts is active in config.json, and its status file
        says what the teammate holds in memory ("working" on what); a turn's end, inactive."""
        self._set_active(active)
        if active:
            self.reporter.set()

    def _set_active(self, active: bool) -> None:
        """``isActive`` in config.json, written only if it changes; never raises (only people
        and the lead read it, and a failure to write it must not fail a turn)."""
        try:
            # its raw entry: no model of the whole team (200 members: ~6 ms of pydantic a turn)
            if self.team.is_active(self.name) is not active:
                self.team.update_member(self.name, isActive=active)
        except (UnknownMember, ProtocolsError):
            pass
        except Exception as exc:  # config.json unreadable, or locked too long
            self.say(f"could not mark itself {'active' if active else 'idle'}: {describe(exc)}")

    def set_mode(self, mode: str) -> None:
        self.brain.set_mode(mode)
        self.say(f"permission mode is now {mode}")

    def current_member(self) -> Member | None:
        return self.team.load().member(self.name)

    def say(self, text: str) -> None:
        """A line in its own pane or log, escaped: a person reads it in a terminal."""
        self._say(f"[{time.strftime('%H:%M:%S')}] {printable(text)}")
