"""The model catalogue: one table of what each Claude model offers and costs.

Every fact a model's requests and bills depend on lives in `MODELS`, one row a model: its
context window, its default and largest ``max_tokens``, how it thinks (``adaptive`` or a
``budget``), its default effort and the efforts it takes, and its prices per million tokens
(`Pricing`: input, output, cache writes for 5 minutes and for an hour, cache reads, and a dearer
tier above a prompt size for the models that have one). The figures are those of Claude Code
2.1.330's bundled catalogue (read from its package, as ``../shared/spec/agents.md`` section 9
says), written down here as data.

Names: `ALIASES` maps ``sonnet``, ``opus``, ``haiku`` and ``fable`` to today's ids (each can be
redirected by ``ANTHROPIC_DEFAULT_<ALIAS>_MODEL``, as in Claude Code); a ``[1m]`` suffix asks
for the 1M window of a model that offers it beyond its native one (beta
``context-1m-2025-08-07``); dated ids (``claude-sonnet-4-5-20250929``) and provider ids
(``us.anthropic.claude-sonnet-5-5``) find their row. `resolve` gives a `Resolved` model: the id
to send, its row (None for a model the catalogue does not know: a newer model or another
vendor's, which still works with `UNKNOWN`'s conservative limits), the window and the betas.

`model_name_problem` tells a typo (``--model shel``) from a model id before anything starts. Prices
are overridden by ``swarm-prices.json`` (`protocols.member.prices`), the window by settings and
``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` (`teammate.agent.context_window`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import NamedTuple

ONE_M = 1_000_000
ONE_M_BETA = "context-1m-2025-08-07"
THINKING_BETA = "interleaved-thinking-2025-05-14"
EFFORT_BETA = "effort-2025-11-24"
EFFORTS = ("low", "medium", "high", "xhigh", "max")
OFFLINE_MODELS = ("shell", "scripted")  # swarm's own: the shell worker, a scripted model
WEB_SEARCH_USD = 0.01  # one web search (the API's web_search tool): every tier's price


class Pricing(NamedTuple):
    """USD per million tokens; `long_prompt`: the tier that applies to a whole request whose
    prompt (input, cache reads and writes) is above `long_prompt_above` tokens."""

    input: float
    output: float
    cache_write: float  # 5-minute cache writes
    cache_read: float
    cache_write_1h: float
    long_prompt: Pricing | None = None
    long_prompt_above: int | None = None

    def tier(self, prompt_tokens: int) -> Pricing:
        """The prices a request of `prompt_tokens` pays."""
        above = self.long_prompt_above
        if self.long_prompt is not None and above is not None and prompt_tokens > above:
            return self.long_prompt
        return self


def _tier(i: float, o: float, w5: float, w1h: float, r: float) -> Pricing:
    """Prices in the order people quote them: input, output, 5 m write, 1 h write, read."""
    return Pricing(i, o, w5, r, w1h)


TIERS: dict[str, Pricing] = {
    "2/10": _tier(2, 10, 2.5, 4, 0.2),
    "2/10 read 0.10": _tier(2, 10, 2.5, 4, 0.1),
    "3/15": _tier(3, 15, 3.75, 6, 0.3),
    "4/20 read 0.20": _tier(4, 20, 5, 8, 0.2),
    "5/25": _tier(5, 25, 6.25, 10, 0.5),
    "8/40 read 0.20": _tier(8, 40, 10, 16, 0.2),
    "10/50": _tier(10, 50, 12.5, 20, 1),
    "10/50 read 0.25": _tier(10, 50, 12.5, 20, 0.25),
    "15/75": _tier(15, 75, 18.75, 30, 1.5),
    "haiku 3.5": _tier(0.8, 4, 1, 1.6, 0.08),
    "haiku 4.5": _tier(1, 5, 1.25, 2, 0.1),
    "haiku 5.5": _tier(0.1, 0.5, 0.125, 0.2, 0.01)._replace(
        long_prompt=_tier(0.5, 2.5, 0.625, 1, 0.05), long_prompt_above=100_000
    ),
}


class ModelInfo(NamedTuple):
    """One row of the catalogue (see the module docstring)."""

    id: str
    family: str
    window: int
    max_output: int  # the default max_tokens
    max_output_upper: int  # the most the API allows
    pricing: Pricing
    thinking: str | None = None  # "adaptive", "budget" (enabled with budget_tokens), or None
    default_effort: str | None = None
    efforts: tuple[str, ...] = ()  # the effort levels it takes (none: no effort parameter)
    one_m: bool = False  # a [1m] suffix (or the beta) opens a 1M window

    @property
    def native_1m(self) -> bool:
        return self.window >= ONE_M


_ADAPTIVE = ("low", "medium", "high", "max")
_ADAPTIVE_X = ("low", "medium", "high", "xhigh", "max")


def _row(
    id: str,
    window: int,
    out: tuple[int, int],
    tier: str,
    effort: str | None = None,
    efforts: tuple[str, ...] = (),
    one_m: bool = False,
    thinks: bool = True,
) -> ModelInfo:
    family = next(f for f in ("haiku", "sonnet", "opus", "fable") if f in id)
    thinking = ("adaptive" if efforts else "budget") if thinks else None
    return ModelInfo(
        id, family, window, out[0], out[1], TIERS[tier], thinking, effort, efforts, one_m
    )


K200 = 200_000
# id, window, (default, upper) max output, price tier, default effort, efforts, [1m]
MODELS: tuple[ModelInfo, ...] = (
    _row("claude-3-5-haiku", K200, (8192, 8192), "haiku 3.5", thinks=False),
    _row("claude-haiku-4-5", K200, (32_000, 64_000), "haiku 4.5", one_m=True),
    _row("claude-haiku-5-5", ONE_M, (128_000, 128_000), "haiku 5.5", "medium", _ADAPTIVE_X),
    _row("claude-3-5-sonnet", K200, (8192, 8192), "3/15", thinks=False),
    _row("claude-3-7-sonnet", K200, (32_000, 64_000), "3/15"),
    _row("claude-sonnet-4-0", K200, (32_000, 64_000), "3/15", one_m=True),
    _row("claude-sonnet-4-5", K200, (32_000, 64_000), "3/15", one_m=True),
    _row("claude-sonnet-4-6", K200, (32_000, 128_000), "3/15", None, _ADAPTIVE, one_m=True),
    _row("claude-sonnet-5", ONE_M, (64_000, 128_000), "2/10", "high", _ADAPTIVE_X),
    _row("claude-sonnet-5-5", ONE_M, (128_000, 128_000), "2/10 read 0.10", "medium", _ADAPTIVE_X),
    _row("claude-opus-4-0", K200, (32_000, 32_000), "15/75", one_m=True),
    _row("claude-opus-4-1", K200, (32_000, 32_000), "15/75", one_m=True),
    _row("claude-opus-4-5", K200, (32_000, 64_000), "5/25", one_m=True),
    _row("claude-opus-4-6", K200, (64_000, 128_000), "5/25", None, _ADAPTIVE, one_m=True),
    _row("claude-opus-4-7", ONE_M, (64_000, 128_000), "5/25", "xhigh", _ADAPTIVE_X),
    _row("claude-opus-4-8", ONE_M, (64_000, 128_000), "5/25", "high", _ADAPTIVE_X),
    _row("claude-opus-5", ONE_M, (64_000, 128_000), "5/25", "high", _ADAPTIVE_X),
    _row("claude-opus-5-5", ONE_M, (128_000, 128_000), "4/20 read 0.20", "medium", _ADAPTIVE_X),
    _row("claude-fable-5", ONE_M, (64_000, 128_000), "10/50", "high", _ADAPTIVE_X),
    _row("claude-fable-5-1", ONE_M, (64_000, 128_000), "10/50 read 0.25", "high", _ADAPTIVE_X),
    _row("claude-fable-5-2", ONE_M, (128_000, 128_000), "8/40 read 0.20", "medium", _ADAPTIVE_X),
)  # fmt: skip
# Claude Code's names for these ids without the minor version
_SHORT_IDS = {"claude-sonnet-4": "claude-sonnet-4-0", "claude-opus-4": "claude-opus-4-0"}
ALIASES = {
    "sonnet": "claude-sonnet-5-5",
    "opus": "claude-opus-5-5",
    "haiku": "claude-haiku-5-5",
    "fable": "claude-fable-5-2",
}
# a model the catalogue does not know: the limits every current model at least has
UNKNOWN = ModelInfo("", "", K200, 32_000, 32_000, TIERS["3/15"], thinking=None)

_BY_ID = {m.id: m for m in MODELS}
_DATE = re.compile(r"(?:-v\d+(?::\d+)?)?(?:[-@]\d{8})?(?:-v\d+(?::\d+)?)?$")
_SUFFIX_1M = re.compile(r"\[1m\]$", re.IGNORECASE)


class Resolved(NamedTuple):
    """A model as requests use it: the id sent, its row, its window, the betas it needs."""

    name: str  # as given (``sonnet[1m]``)
    id: str  # as sent to the API (``claude-sonnet-4-5``)
    info: ModelInfo | None
    window: int
    betas: tuple[str, ...] = ()

    @property
    def known(self) -> ModelInfo:
        """Its row, or `UNKNOWN`'s limits."""
        return self.info if self.info is not None else UNKNOWN


def lookup(model_id: str) -> ModelInfo | None:
    """The row of `model_id`: exact, dated, provider-prefixed or short; None if unknown."""
    key = _SUFFIX_1M.sub("", model_id.strip().lower())
    key = key.rsplit("/", 1)[-1]  # a gateway's "vendor/model"
    key = re.sub(r"^(?:[a-z]{2,6}\.)?anthropic\.", "", key)  # us.anthropic.claude-...
    for candidate in (key, _DATE.sub("", key)):
        candidate = _SHORT_IDS.get(candidate, candidate)
        if candidate in _BY_ID:
            return _BY_ID[candidate]
    return None


def alias_target(alias: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The id an alias (``sonnet``) stands for here; None if `alias` is not one."""
    env = os.environ if environ is None else environ
    key = alias.strip().lower()
    if key not in ALIASES:
        return None
    return env.get(f"ANTHROPIC_DEFAULT_{key.upper()}_MODEL") or ALIASES[key]


def resolve(name: str, environ: Mapping[str, str] | None = None) -> Resolved:
    """`name` (an alias or an id, with or without ``[1m]``) as requests use it."""
    given = name.strip()
    one_m = bool(_SUFFIX_1M.search(given))
    base = _SUFFIX_1M.sub("", given)
    model_id = alias_target(base, environ) or base
    info = lookup(model_id)
    window = (info or UNKNOWN).window
    betas: tuple[str, ...] = ()
    if one_m and (info is None or info.one_m) and window < ONE_M:
        window, betas = ONE_M, (ONE_M_BETA,)
    return Resolved(given, model_id, info, window, betas)


def known_names() -> list[str]:
    """Every name `--model` knows: swarm's offline models, the aliases, the ids."""
    ones = [f"{a}[1m]" for a in ALIASES]
    return [*OFFLINE_MODELS, *ALIASES, *ones, *(m.id for m in MODELS)]


def model_name_problem(name: str) -> str | None:
    """Why `name` cannot be a ``--model`` value (a typo: ``shel``, ``sonet``), with the names
    it is close to; None if it can be. A word without a digit, dash, dot, slash or colon must be
    a known name; anything else is a model id as given (a newer model, another vendor's)."""
    given = name.strip()
    if not given:
        return "--model needs a value: shell, scripted, sonnet, opus, haiku or a model id"
    if given.lower() in known_names() or resolve(given).info is not None:
        return None
    if re.search(r"[\d\-./:@\[]", given):
        return None
    import difflib  # here: only a name that is not known needs it

    close = difflib.get_close_matches(given.lower(), known_names(), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return (
        f"unknown model {given!r}{hint} (use shell, scripted, sonnet, opus, haiku, fable, "
        "or a model id such as claude-sonnet-5-5)"
    )
