"""A package's names imported when first used (PEP 562's module ``__getattr__``): a command that
needs one module of a package must not load all of them (`protocols`: every model; `protocols.pg`:
psycopg)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A ``__getattr__`` for `package` that finds a name of `homes` in its module (name ->
    submodule, relative to `package`), keeps it in the package's namespace, and returns it."""

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return getattr_
