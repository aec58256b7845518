"""The one price table: what a model's tokens cost, in USD, for budgets (the teammate) and for
`swarm status`/`swarm watch` (`swarm.views.costs` re-exports it); and the model aliases.

Prices are USD per million tokens for plain input, output, cache writes (5-minute) and cache
reads. The defaults are *estimates*: Anthropic's published list prices of the 4.5 generation as
known when this was written, and the same per family for the 5.5 ids. They are not read from
any bill; override them with ``$CLAUDE_CONFIG_DIR/swarm-prices.json``::

    {"claude-sonnet-5-5": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3},
     "opus": {"output": 30}}

A key is a model id or a family (``opus``, ``sonnet``, ``haiku``); the file is merged over the
defaults (a key already priced may give only the fields that change; a new one gives all four).

A model is priced by, in order: the override of its exact id, the override of its family, the
default of its exact id, the longest default id it starts with (dated ids such as
``claude-sonnet-4-5-20250929``), the default of its family. Aliases (``sonnet``) are resolved
first, as the teammate resolves them (`resolve_model`). Anything else (``shell``,
``scripted``, other vendors' models) has no price: its cost is None.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from protocols import safefs
from protocols.errors import ProtocolsError
from protocols.paths import config_root

PRICES_FILE = "swarm-prices.json"
FAMILIES = ("opus", "sonnet", "haiku")
MODEL_ALIASES = {
    "sonnet": "claude-sonnet-5-5",
    "opus": "claude-opus-5-5",
    "haiku": "claude-haiku-5-5",
}


class PriceFileError(ProtocolsError, ValueError):
    """``swarm-prices.json`` is not a valid price table; the message names the file and key."""


def resolve_model(name: str, environ: Mapping[str, str] | None = None) -> str:
    """The model id for an alias (``sonnet``, ``opus``, ``haiku``); any other name as given."""
    env = os.environ if environ is None else environ
    alias = name.strip().lower()
    if alias in MODEL_ALIASES:
        return env.get(f"ANTHROPIC_DEFAULT_{alias.upper()}_MODEL") or MODEL_ALIASES[alias]
    return name.strip()


class Price(NamedTuple):
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float


_FAMILY_PRICES = {
    "sonnet": Price(3.0, 15.0, 3.75, 0.30),
    "opus": Price(5.0, 25.0, 6.25, 0.50),
    "haiku": Price(1.0, 5.0, 1.25, 0.10),
}
_OLDER_IDS = ("claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5")


def _family(model: str) -> str | None:
    lowered = model.lower()
    return next((f for f in FAMILIES if f in lowered), None)


def default_prices() -> dict[str, Price]:
    """The built-in table: every id of `MODEL_ALIASES`, the older 4.5 ids, and the families."""
    table: dict[str, Price] = dict(_FAMILY_PRICES)
    for model in (*MODEL_ALIASES.values(), *_OLDER_IDS):
        family = _family(model)
        if family is not None:
            table[model] = _FAMILY_PRICES[family]
    return table


class PriceTable(NamedTuple):
    """The defaults and the overrides from the prices file, kept apart for the lookup order."""

    defaults: Mapping[str, Price]
    overrides: Mapping[str, Price]

    def price_of(self, model: str | None) -> Price | None:
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
        prefixes = [k for k in self.defaults if k not in FAMILIES and key.startswith(k)]
        if prefixes:
            return self.defaults[max(prefixes, key=len)]
        return self.defaults.get(family) if family is not None else None

    def cost(self, model: str | None, usage: Mapping[str, int]) -> float | None:
        """USD for `usage` (the API's token counts) on `model`; None if it has no price."""
        price = self.price_of(model)
        if price is None:
            return None
        total = (
            usage.get("input_tokens", 0) * price.input
            + usage.get("output_tokens", 0) * price.output
            + usage.get("cache_creation_input_tokens", 0) * price.cache_write
            + usage.get("cache_read_input_tokens", 0) * price.cache_read
        )
        return total / 1_000_000


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


def _parse_entry(path: Path, key: str, value: Any, defaults: Mapping[str, Price]) -> Price:
    names = list(Price._fields)
    allowed = ", ".join(names)
    if not isinstance(value, dict):
        raise PriceFileError(f"{path}: {key!r} must be an object with the prices {allowed}")
    unknown = sorted(set(value) - set(names))
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
    base = defaults.get(key.lower())
    if base is not None:
        return base._replace(**{k: float(v) for k, v in value.items()})
    missing = [n for n in names if n not in value]
    if missing:
        raise PriceFileError(
            f"{path}: {key!r} is not a priced model or family, so it needs every price; "
            f"missing: {', '.join(missing)}"
        )
    return Price(**{k: float(v) for k, v in value.items()})
