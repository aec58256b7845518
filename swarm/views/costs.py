"""The price table for `swarm status` and `swarm watch`: `protocols.member.prices` (where the
teammate finds it too, for budgets), with a bad price file reported as a `SwarmError`.

See `protocols.member.prices` for the defaults, the ``$CLAUDE_CONFIG_DIR/swarm-prices.json``
overrides and the lookup order.
"""

from __future__ import annotations

from pathlib import Path

from protocols.member.prices import (
    FAMILIES,
    PRICES_FILE,
    Price,
    PriceFileError,
    PriceTable,
    default_prices,
    prices_path,
)
from protocols.member.prices import load_prices as _load_prices
from swarm.errors import SwarmError

__all__ = [
    "FAMILIES",
    "PRICES_FILE",
    "Price",
    "PriceTable",
    "cost",
    "default_prices",
    "load_prices",
    "price_of",
    "prices_path",
]


def load_prices(root: Path | None = None) -> PriceTable:
    """The defaults with the overrides of ``<root>/swarm-prices.json`` (if there is one).

    Raises `SwarmError` naming the file and the key for a file that is not a valid table.
    """
    try:
        return _load_prices(root)
    except PriceFileError as exc:
        raise SwarmError(str(exc)) from None


def price_of(model: str | None) -> Price | None:
    """The price of `model` (an id, a dated id or an alias), with the overrides; None if unknown."""
    return load_prices().price_of(model)


def cost(model: str | None, usage: dict[str, int]) -> float | None:
    """USD for `usage` on `model`, with the overrides; None if the model has no price."""
    return load_prices().cost(model, usage)
