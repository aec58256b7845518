"""An agent's budget: its limits (USD, tokens, time), what it has spent, and the gate every model
request of the agent and of its sub-agents passes first.

Spend is counted per model call (`add`, from `teammate.reporter.StatusReporter.model_call`, which
every loop of the process reports to, sub-agents' included), priced on the model that answered
(`protocols.member.prices`); tokens are all the model read or wrote (input, output, cache writes and
cache reads); time is wall-clock from the process's start. The limits are the command line's until
`swarm budget` writes the member's budget file (`protocols.member.budget`), which is read again
before each request and while stopped.

What the gate does (`gate`, before each model request; `settle` between turns):

- at 80% of a limit, the lead is told once for that limit (`Notices.warn`);
- at 100% the request is not made: the lead is told once for that limit (`Notices.over`, an
  ``idle_notification`` with ``idleReason: failed``), the status says ``over budget``, and the
  caller waits (the teammate meanwhile answers shutdown requests) until a raise, then the lead
  is told it carries on (`Notices.back`) and the request is made. The tool calls of the answer
  that crossed the limit have run by then: the gate only stands before the next request.

The team's budget (`swarm team budget`, `protocols.member.budget.TeamBudgetFile`) is a limit of the
same kind for what every member has spent together (`protocols.store.spend`, read at most once a
second, and again after each of this agent's own calls): at it, this agent stops as at its own,
with the team's reason, until it is raised. Members check it apart, so members whose requests
cross the limit at the same moment each make theirs: it may be overshot by one request each.
The team's time limit counts from when it was set (its file's ``timeFrom``), on this machine's
clock.

Thread-safe: background sub-agents pass the gate from their own threads; each notice is sent
once, by whichever thread gets there first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocols.clock import ms_from_iso
from protocols.durations import duration_text
from protocols.member.budget import Limits, read_budget, read_team_budget
from protocols.member.prices import PriceTable
from protocols.member.prices import usd as money
from protocols.member.status import BudgetStatus
from protocols.paths import TeamPaths
from protocols.store.spend import TeamSpend, team_spend

if TYPE_CHECKING:  # `swarm budget` imports this module: no model code (nor yaml) for it
    from teammate.api.model import Usage

WARN_AT = 0.8  # of a limit: the lead is told once
WAIT_S = 1.0  # a stopped agent looks at its budget file at least this often
TEAM_LOOK_S = 1.0  # the team's spend (every member's status file) is read at most this often


@dataclass
class Notices:
    """What the budget tells the lead (each text says who, what and how to raise it)."""

    warn: Callable[[str], None] = lambda text: None
    over: Callable[[str], None] = lambda reason: None
    back: Callable[[str], None] = lambda text: None


def amount(number: float) -> str:
    """A raise as `swarm budget` takes it: ``1``, ``0.5``, ``20000``."""
    return f"{number:g}" if number < 1e6 else str(int(number))


class Budget:
    """Limits and spend of one agent process (module doc)."""

    def __init__(
        self,
        name: str,
        limits: Limits,
        prices: PriceTable,
        paths: TeamPaths | None = None,
        notices: Notices | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        self.clock = clock  # its own time limit counts on this, from now
        self.wall = wall  # the team's counts on this, from the team file's timeFrom
        self.started = clock()
        self.limits = limits
        self.prices = prices
        self.paths = paths
        self.notices = notices or Notices()
        self.joined_at: int | None = None  # which budget file is this instance's (once joined)
        self.cost = 0.0
        self.tokens = 0
        self.over = False
        # the main thread's way to wait while stopped (the teammate's answers its inbox)
        self.waiter: Callable[[float], None] | None = None
        self.waiter_thread: int | None = None
        self.on_change: Callable[[], None] = lambda: None  # over or not: the status to write
        self._warned: set[tuple[str, float]] = set()
        self._stopped_for: tuple[Limits, Limits | None] | None = None
        self._lock = threading.RLock()
        self.team_limits: Limits | None = None  # the team's (`swarm team budget`), if any
        self.team_from: float | None = None  # when the team's time limit started (epoch s)
        # when the team's spend was read, what it was, and this agent's own spend then
        self._team: tuple[float, TeamSpend, float] | None = None

    # spend

    def add(self, model: str | None, usage: Usage) -> None:
        """One model call's usage, priced on `model` (unpriced: tokens only)."""
        value = usage.to_value()
        with self._lock:
            self.tokens += usage.total
            self.cost += self.prices.cost(model, value) or 0.0

    def status(self) -> BudgetStatus:
        with self._lock:
            return BudgetStatus(
                maxCostUsd=self.limits.maxCostUsd,
                maxTokens=self.limits.maxTokens,
                maxSeconds=self.limits.maxSeconds,
                costUsd=round(self.cost, 6),
                tokens=self.tokens,
                seconds=round(self.elapsed(), 3),
                over=self.over,
                reason=self.reason(),
            )

    # limits

    def refresh(self) -> None:
        """Take up the member's budget file, if `swarm budget` wrote one for this instance, and
        the team's."""
        if self.paths is None:
            return
        team = read_team_budget(self.paths)
        since = ms_from_iso(team.timeFrom) if team and team.timeFrom else None
        with self._lock:
            self.team_limits = Limits(**team.limits_dict()) if team and team.any else None
            self.team_from = since / 1000 if since is not None else None
        if self.joined_at is None:
            return
        found = read_budget(self.paths, self.name, self.joined_at)
        if found is not None:
            with self._lock:
                self.limits = Limits(**found.limits_dict())

    def elapsed(self) -> float:
        """Seconds since the process started (its time limit counts them)."""
        return self.clock() - self.started

    def reason(self) -> str | None:
        """Why no more requests may be made (the first limit reached); None: they may."""
        with self._lock:
            cap, tokens = self.limits.maxCostUsd, self.limits.maxTokens
            if cap is not None and self.cost >= cap:
                return (
                    f"over budget: spent {money(self.cost)} of {money(cap)}; raise it with "
                    f"`swarm budget {self.name} +{amount(cap)}`"
                )
            if tokens is not None and self.tokens >= tokens:
                return (
                    f"over budget: used {self.tokens:,} of {tokens:,} tokens; raise it with "
                    f"`swarm budget {self.name} --tokens +{tokens}`"
                )
            seconds, ran = self.limits.maxSeconds, self.elapsed()
            if seconds is not None and ran >= seconds:
                return (
                    f"over its time: ran {duration_text(ran)} of {duration_text(seconds)}; "
                    f"raise it with `swarm budget {self.name} --time +{_arg(seconds)}`"
                )
            return self._team_reason()

    def _team_reason(self) -> str | None:
        """Under the lock: why the team's budget stops this member (None: it does not)."""
        team = self.team_limits
        if team is None or self.paths is None:
            return None
        now = time.monotonic()
        looked = self._team
        if looked is None or now - looked[0] >= TEAM_LOOK_S or looked[2] != self.cost:
            # the others' status files, and its own spend as it is now (its file may lag)
            self._team = looked = (now, team_spend(self.paths, but=self.name), self.cost)
        others = looked[1]
        spent = TeamSpend(others.cost_usd + self.cost, others.tokens + self.tokens)
        cap, tokens = team.maxCostUsd, team.maxTokens
        if cap is not None and spent.cost_usd >= cap:
            return (
                f"the team is over its budget: its members have spent {money(spent.cost_usd)} "
                f"of {money(cap)} together; raise it with `swarm team budget +{amount(cap)}`"
            )
        if tokens is not None and spent.tokens >= tokens:
            return (
                f"the team is over its budget: its members have used {spent.tokens:,} of "
                f"{tokens:,} tokens together; raise it with "
                f"`swarm team budget --tokens +{tokens}`"
            )
        seconds, since = team.maxSeconds, self.team_from
        if seconds is not None and since is not None and self.wall() - since >= seconds:
            return (
                f"the team is over its time: it has run {duration_text(self.wall() - since)} "
                f"of {duration_text(seconds)}; raise it with "
                f"`swarm team budget --time +{_arg(seconds)}`"
            )
        return None

    # the gate

    def settle(self, announce_over: bool = True) -> bool:
        """Read the limits again and say what there is to say (80%, back, and over unless
        `announce_over` is false: a turn that ends says it in its idle notification, see
        `over_now`); True if the agent may make a model request."""
        self.refresh()
        with self._lock:  # notices are sent after it is released (they write the status)
            warnings = self._warnings()
            reason = self.reason()
            if reason is None:
                back = self.over
                self.over = False
                stopped = False
            else:
                back = False
                self.over = True
                stopped = self._stopped_for != (self.limits, self.team_limits)
                self._stopped_for = (self.limits, self.team_limits)
            said = self._spent()
        if back or stopped:
            self.on_change()
        for text in warnings:
            self.notices.warn(text)
        if back:
            self.notices.back(
                f"{self.name} has a new budget ({self._limits_text()}; spent {said}) and carries on"
            )
        if stopped and reason is not None and announce_over:
            self.notices.over(reason)
        return reason is None

    def over_now(self) -> str | None:
        """The reason, if over budget now (the lead then counts as told: the caller says it,
        in the idle notification of a turn that ended over budget); None if not over."""
        self.refresh()
        with self._lock:
            reason = self.reason()
            changed = reason is not None and not self.over
            if reason is not None:
                self.over = True
                self._stopped_for = (self.limits, self.team_limits)
        if changed:
            self.on_change()
        return reason

    def gate(
        self, wait: Callable[[float], None], before_wait: Callable[[], None] | None = None
    ) -> bool:
        """Before a model request: return when it may be made; while over budget, `wait` (or the
        main thread's `waiter`) and look again, calling `before_wait` once first. Whatever
        `wait` raises (a shutdown, a stop) ends the wait. True if it waited."""
        waited = False
        while not self.settle():
            if not waited and before_wait is not None:
                before_wait()
            waited = True
            mine = self.waiter is not None and self.waiter_thread == threading.get_ident()
            if mine and self.waiter is not None:
                self.waiter(WAIT_S)
            else:
                wait(WAIT_S)
        return waited

    def _warnings(self) -> list[str]:
        """Under the lock: the 80% notices due, once for each limit."""
        due = []
        for kind, limit, spent in (
            ("cost", self.limits.maxCostUsd, self.cost),
            ("tokens", self.limits.maxTokens, float(self.tokens)),
            ("time", self.limits.maxSeconds, self.elapsed()),
        ):
            if limit is None or spent < WARN_AT * limit or spent >= limit:
                continue
            if (kind, float(limit)) in self._warned:
                continue
            self._warned.add((kind, float(limit)))
            due.append(
                f"{self.name} has used {spent / limit:.0%} of its budget ({self._spent()} of "
                f"{self._limits_text()}); it stops at 100% until the budget is raised "
                f"(`swarm budget {self.name} +USD`)"
            )
        return due

    def _spent(self) -> str:
        parts = []
        if self.limits.maxCostUsd is not None:
            parts.append(money(self.cost))
        if self.limits.maxTokens is not None:
            parts.append(f"{self.tokens:,} tokens")
        if self.limits.maxSeconds is not None:
            parts.append(duration_text(self.elapsed()))
        return ", ".join(parts) or money(self.cost)

    def _limits_text(self) -> str:
        parts = []
        if self.limits.maxCostUsd is not None:
            parts.append(money(self.limits.maxCostUsd))
        if self.limits.maxTokens is not None:
            parts.append(f"{self.limits.maxTokens:,} tokens")
        if self.limits.maxSeconds is not None:
            parts.append(duration_text(self.limits.maxSeconds))
        team = self.team_limits
        if team is not None and team.any:
            cap = [money(team.maxCostUsd)] if team.maxCostUsd is not None else []
            cap += [f"{team.maxTokens:,} tokens"] if team.maxTokens is not None else []
            cap += [duration_text(team.maxSeconds)] if team.maxSeconds is not None else []
            parts.append(f"the team's {', '.join(cap)}")
        return ", ".join(parts) or "no limit"


def _arg(seconds: float) -> str:
    """A duration as `swarm budget --time` takes it: ``2h30m``."""
    return duration_text(seconds).replace(" ", "")
