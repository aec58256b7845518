"""How an agent's requests to its model are made, from the model catalogue
(`protocols.member.catalogue`) and what the person set: the answer's room (``max_tokens``), thinking
and effort, the betas, and the context window with the size at which the conversation is
compacted.

- ``max_tokens``: the model's default (``CLAUDE_CODE_MAX_OUTPUT_TOKENS`` changes it, up to the
  model's most).
- Thinking: a model with adaptive thinking (the 5.x models) thinks adaptively at its default
  effort, or the effort given (``--effort``, a definition's ``effort``,
  ``CLAUDE_CODE_EFFORT_LEVEL``), sent as ``output_config.effort`` with the betas
  ``interleaved-thinking-2025-05-14`` and ``effort-2025-11-24``; a level the model does not take
  is lowered to the nearest it does (``xhigh`` -> ``high``), and a number (a token budget) is
  read as the level of that size. An older model thinks only when an effort is given, with
  ``budget_tokens`` (`THINKING_BUDGETS`) and room for the answer on top.
  ``CLAUDE_CODE_DISABLE_THINKING`` turns thinking off where the model allows it.
- The window: the model's (a ``[1m]`` suffix: 1M), lowered by ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``
  or the settings' ``autoCompactWindow`` (at least `MIN_WINDOW`; ``200k``, ``1m`` and plain
  numbers are read). The conversation is compacted when a request's real size passes
  `threshold`: the window less room for the answer (min(max_tokens, 20,000, a fifth of the
  window)) and for the summary (min(13,000, a tenth of the window)); for a 1M window that is
  967,000 tokens, as in Claude Code, and a small window keeps most of itself (a 40,000 window
  compacts at 28,000, where Claude Code's fixed 33,000 of headroom would leave 7,000).
  ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` (1-100) lowers it to that share of the window less the
  answer's room.

An environment value that cannot be read is an error naming the variable and what it takes
(`SettingsValueError`), before the teammate makes any request.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from protocols.errors import Error
from protocols.member.catalogue import EFFORT_BETA, EFFORTS, THINKING_BETA, Resolved, resolve

MIN_WINDOW = 10_000
ANSWER_ROOM = 20_000
SUMMARY_ROOM = 13_000
MIN_MAX_TOKENS = 1_024
# tokens a budget-thinking model may think, per effort level (the answer gets its own room)
THINKING_BUDGETS = {"low": 4_000, "medium": 10_000, "high": 24_000, "xhigh": 32_000, "max": 48_000}
ANSWER_AFTER_THINKING = 16_000


class SettingsValueError(Error, ValueError):
    """An environment variable or setting with a value that cannot be used; says which."""


@dataclass(frozen=True)
class ModelSettings:
    """What every request of one agent says besides its content (module doc)."""

    model: Resolved
    max_tokens: int
    thinking: dict[str, Any] | None
    effort: str | None
    betas: tuple[str, ...]
    window: int
    threshold: int

    @classmethod
    def of(
        cls,
        model: str,
        effort: str | int | None = None,
        environ: Mapping[str, str] | None = None,
        window: int | None = None,
    ) -> ModelSettings:
        """The settings for `model` with `effort` (None: the model's default), the
        environment's variables, and a window asked for by settings (`window`)."""
        env = os.environ if environ is None else environ
        resolved = resolve(model, env)
        info = resolved.known
        max_tokens = _number(env, "CLAUDE_CODE_MAX_OUTPUT_TOKENS") or info.max_output
        max_tokens = max(MIN_MAX_TOKENS, min(max_tokens, info.max_output_upper))
        if effort is None and env.get("CLAUDE_CODE_EFFORT_LEVEL"):
            effort = _effort_level(env["CLAUDE_CODE_EFFORT_LEVEL"], "CLAUDE_CODE_EFFORT_LEVEL")
        thinking: dict[str, Any] | None = None
        level: str | None = None
        off = bool(env.get("CLAUDE_CODE_DISABLE_THINKING"))
        if info.thinking == "adaptive":
            level = _supported(effort, info.efforts) or info.default_effort
            if not off or info.default_effort is not None:  # it rejects no thinking
                thinking = {"type": "adaptive"}
        elif effort is not None and not off:  # budget thinking only when asked for
            budget = THINKING_BUDGETS[effort] if isinstance(effort, str) else int(effort)
            thinking = {"type": "enabled", "budget_tokens": budget}
            max_tokens = max(max_tokens, budget + ANSWER_AFTER_THINKING)
        betas = list(resolved.betas)
        if thinking is not None:
            betas.append(THINKING_BETA)
        if level is not None:
            betas.append(EFFORT_BETA)
        asked = _window(env) or window
        size = min(resolved.window, asked) if asked else resolved.window
        return cls(
            resolved,
            max_tokens,
            thinking,
            level,
            tuple(betas),
            size,
            threshold_of(size, max_tokens, env),
        )

    def with_window(self, window: int, environ: Mapping[str, str] | None = None) -> ModelSettings:
        """The same with a smaller window (the API said its limit is `window`)."""
        env = os.environ if environ is None else environ
        size = max(MIN_WINDOW, min(self.window, window))
        return ModelSettings(
            self.model,
            self.max_tokens,
            self.thinking,
            self.effort,
            self.betas,
            size,
            threshold_of(size, self.max_tokens, env),
        )

    def room(self, prompt_tokens: int) -> int:
        """``max_tokens`` for a request of about `prompt_tokens`: the model's, but no more than
        the window leaves (a thinking budget keeps its room)."""
        left = self.window - prompt_tokens - prompt_tokens // 50 - 256
        floor = MIN_MAX_TOKENS
        if self.thinking is not None and "budget_tokens" in self.thinking:
            floor = int(self.thinking["budget_tokens"]) + MIN_MAX_TOKENS
        return max(floor, min(self.max_tokens, left))


def threshold_of(window: int, max_tokens: int, environ: Mapping[str, str]) -> int:
    """The real size past which a conversation in `window` is compacted (module doc)."""
    effective = window - min(max_tokens, ANSWER_ROOM, window // 5)
    threshold = effective - min(SUMMARY_ROOM, window // 10)
    pct = _percent(environ)
    if pct is not None:
        threshold = min(threshold, int(effective * pct / 100))
    return threshold


def parse_window(value: Any, where: str) -> int:
    """A window as settings and the environment give it (``40000``, ``200k``, ``1m``); at least
    `MIN_WINDOW` tokens, or a `SettingsValueError` naming `where`."""
    text = str(value).strip().lower().replace(",", "").replace("_", "")
    found = re.fullmatch(r"(\d+(?:\.\d+)?)([km]?)", text) if not isinstance(value, bool) else None
    tokens = None
    if found:
        tokens = int(float(found[1]) * {"": 1, "k": 1_000, "m": 1_000_000}[found[2]])
    if tokens is None or tokens < MIN_WINDOW:
        raise SettingsValueError(
            f"{where} must be a number of tokens of at least {MIN_WINDOW:,} (such as 200000, "
            f"200k or 1m), not {value!r}"
        )
    return tokens


def _window(environ: Mapping[str, str]) -> int | None:
    value = environ.get("CLAUDE_CODE_AUTO_COMPACT_WINDOW")
    return parse_window(value, "CLAUDE_CODE_AUTO_COMPACT_WINDOW") if value else None


def _percent(environ: Mapping[str, str]) -> float | None:
    value = environ.get("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
    if not value:
        return None
    try:
        pct = float(value)
    except ValueError:
        pct = -1.0
    if not 0 < pct <= 100:
        raise SettingsValueError(
            f"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE must be a percentage above 0 and at most 100, "
            f"not {value!r}"
        )
    return pct


def _number(environ: Mapping[str, str], name: str) -> int | None:
    value = environ.get(name)
    if not value:
        return None
    if not value.strip().isdigit() or int(value) < 1:
        raise SettingsValueError(f"{name} must be a positive whole number, not {value!r}")
    return int(value)


def _effort_level(value: str, where: str) -> str:
    if value not in EFFORTS:
        raise SettingsValueError(f"{where} must be one of {', '.join(EFFORTS)}, not {value!r}")
    return value


def _supported(effort: str | int | None, efforts: tuple[str, ...]) -> str | None:
    """`effort` as a level the model takes: a number is the level of that budget, and a level
    it does not take is the nearest one below (``xhigh`` -> ``high``)."""
    if effort is None or not efforts:
        return None
    if not isinstance(effort, str):
        levels = sorted(THINKING_BUDGETS.items(), key=lambda item: item[1])
        effort = next((lvl for lvl, budget in levels if effort <= budget), "max")
    ranked = list(EFFORTS)
    for level in reversed(ranked[: ranked.index(effort) + 1]):
        if level in efforts:
            return level
    return efforts[0]
