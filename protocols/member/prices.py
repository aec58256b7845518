"""What a model's tokens cost, in USD, for budgets (the teammate) and for `swarm status`/`swarm
watch` (`swarm.views.costs` re-exports it).

The prices are the model catalogue's (`protocols.member.catalogue`: Claude Code 2.1.330's figures,
per million tokens: input, output, cache writes for 5 minutes and for an hour, cache reads, and the
dearer tier of a request above a prompt size where a model has one). They are the list prices as
Claude Code knows them, not read from any bill; override them with
``$CLAUDE_CONFIG_DIR/swarm-prices.json``::

    {"claude-sonnet-5-5": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3},
     "opus": {"output": 30}}

A key is a model id or a family (``opus``, ``sonnet``, ``haiku``, ``fable``); the file is
merged over the defaults: a key already priced may give only the fields that change (its
long-prompt tier, if it had one, no longer applies); a new one gives ``input``, ``output``,
``cache_write`` and ``cache_read`` (``cache_write_1h`` is optional: twice the input price, as
the API bills it, when left out).

A model is priced by, in order: the override of its exact id, the override of its family, its
row in the catalogue (dated and provider ids included), the latest model of its family. Aliases
(``sonnet``) are resolved first, as the teammate resolves them. Anything else (``shell``,
``scripted``, other vendors' models) has no price: its cost is None.

`cost` prices one request's usage: its prompt size picks the tier, the part of its cache
writes made for an hour (``cache_creation_1h_input_tokens``, as `teammate.api.model.Usage`
keeps it) is priced as such, and each web search (``web_search_requests``) costs
`WEB_SEARCH_USD`, the catalogue's price for every model. A sum of many requests' usage is
priced as if it were one (the teammate prices each request as it comes, and its status file
keeps that sum, ``costUsd``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from protocols.errors import ProtocolsError
from protocols.fs import safefs
from protocols.member.catalogue import (
    ALIASES,
    MODELS,
    WEB_SEARCH_USD,
    Pricing,
    alias_target,
    lookup,
)
from protocols.paths import config_root

PRICES_FILE = "swarm-prices.json"
FAMILIES = tuple(ALIASES)  # opus, sonnet, haiku, fable: an alias names its family's latest
Price = Pricing  # the name the views and tests use
PRICE_KEYS = ("input", "output", "cache_write", "cache_read", "cache_write_1h")
ONE_HOUR_KEY = "cache_creation_1h_input_tokens"  # of the cache writes, those made for an hour
WEB_SEARCHES_KEY = "web_search_requests"  # the web searches a request made (server_tool_use)


class PriceFileError(ProtocolsError, ValueError):
    """``swarm-prices.json`` is not a valid price table; the message names the file and key."""


def resolve_model(name: str) -> str:
    """The model id for an alias (``sonnet``, ``opus``, ``haiku``, ``fable``); any other name as
    given (without surrounding spaces)."""
    return alias_target(name) or name.strip()


def _family(model: str) -> str | None:
    lowered = model.lower()
    return next((f for f in FAMILIES if f in lowered), None)


def default_prices() -> dict[str, Pricing]:
    """The catalogue's prices: every model id, and each family at its latest model's."""
    table: dict[str, Pricing] = {m.id: m.pricing for m in MODELS}
    for family, model_id in ALIASES.items():
        table[family] = table[model_id]
    return table


class PriceTable(NamedTuple):
    """The defaults and the overrides from the prices file, kept apart for the lookup order."""

    defaults: Mapping[str, Pricing]
    overrides: Mapping[str, Pricing]

    def price_of(self, model: str | None) -> Pricing | None:
        if not model:
            return None
        model = resolve_model(model)
        key = model.lower()
        family = _family(key)
        if key in self.overrides:
            return self.overrides[key]
        if family is not None and family in self.overrides:
            return self.overrides[family]
        if key in self.defaults:
            return self.defaults[key]
        row = lookup(key)
        if row is not None and row.id in self.defaults:
            return self.defaults[row.id]
        return self.defaults.get(family) if family is not None else None

    def cost(self, model: str | None, usage: Mapping[str, int]) -> float | None:
        """USD for `usage` (the API's token counts of one request) on `model`; None if it has
        no price."""
        price = self.price_of(model)
        if price is None:
            return None
        written = usage.get("cache_creation_input_tokens", 0)
        hour = min(usage.get(ONE_HOUR_KEY, 0), written)
        read = usage.get("cache_read_input_tokens", 0)
        plain = usage.get("input_tokens", 0)
        price = price.tier(plain + written + read)
        total = (
            plain * price.input
            + usage.get("output_tokens", 0) * price.output
            + (written - hour) * price.cache_write
            + hour * price.cache_write_1h
            + read * price.cache_read
        )
        return total / 1_000_000 + usage.get(WEB_SEARCHES_KEY, 0) * WEB_SEARCH_USD


def usd(value: float) -> str:
    """USD as a person reads it: ``$1.00``, ``$0.42``, ``$0.0135`` (cents, or 3 significant
    digits below a cent's precision)."""
    if value >= 1 or round(value, 2) == value:
        return f"${value:,.2f}"
    return f"${value:.3g}"


def prices_path(root: Path | None = None) -> Path:
    return (root if root is not None else config_root()) / PRICES_FILE


def load_prices(root: Path | None = None) -> PriceTable:
    """The defaults with the overrides of ``<root>/swarm-prices.json`` (if there is one).

    Raises `PriceFileError` naming the file and the key for a file that is not a valid table.
    """
    defaults = default_prices()
    path = prices_path(root)
    try:
        text = safefs.read_regular(path).decode("utf-8")
    except FileNotFoundError:
        return PriceTable(defaults, {})
    except OSError as exc:
        raise PriceFileError(f"cannot read the price file {path}: {exc}") from None
    try:
        raw: Any = json.loads(text)
    except ValueError as exc:
        raise PriceFileError(f"the price file {path} is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise PriceFileError(
            f"the price file {path} must be a JSON object of model id or family -> prices"
        )
    overrides = {str(k).lower(): _parse_entry(path, str(k), v, defaults) for k, v in raw.items()}
    return PriceTable(defaults, overrides)


def _parse_entry(path: Path, key: str, value: Any, defaults: Mapping[str, Pricing]) -> Pricing:
    allowed = ", ".join(PRICE_KEYS)
    if not isinstance(value, dict):
        raise PriceFileError(f"{path}: {key!r} must be an object with the prices {allowed}")
    unknown = sorted(set(value) - set(PRICE_KEYS))
    if unknown:
        raise PriceFileError(f"{path}: {key!r} has unknown keys {unknown}; allowed: {allowed}")
    for name, number in value.items():
        if (
            isinstance(number, bool)
            or not isinstance(number, int | float)
            or not math.isfinite(number)
            or number < 0
        ):
            raise PriceFileError(
                f"{path}: {key!r}.{name} must be a number of USD per million tokens (>= 0), "
                f"not {number!r}"
            )
    given = {k: float(v) for k, v in value.items()}
    base = defaults.get(key.lower())
    if base is not None:  # a changed price: the long-prompt tier no longer applies
        return base._replace(long_prompt=None, long_prompt_above=None, **given)
    missing = [n for n in PRICE_KEYS[:4] if n not in value]
    if missing:
        raise PriceFileError(
            f"{path}: {key!r} is not a priced model or family, so it needs every price "
            f"({', '.join(PRICE_KEYS[:4])}); missing: {', '.join(missing)}"
        )
    return Pricing(
        input=given["input"],
        output=given["output"],
        cache_write=given["cache_write"],
        cache_read=given["cache_read"],
        cache_write_1h=given.get("cache_write_1h", 2 * given["input"]),
    )
