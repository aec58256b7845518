"""The ``sandbox`` key of Claude Code's settings files, read and merged.

```json
{"sandbox": {"enabled": true, "failIfUnavailable": false, "excludedCommands": ["docker *"],
             "allowUnsandboxedCommands": true,
             "filesystem": {"allowWrite": ["~/.cache"], "denyWrite": [".git/hooks"],
                            "denyRead": ["~/.ssh"]},
             "network": {"allowedDomains": ["*"]}}}
```

Every key is optional. A value of the wrong type is a `SandboxSettingsError` naming the file's
key and what it must be. Across settings files (lowest precedence first) a later scalar wins
and lists add up, as Claude Code merges them. Keys Claude Code has that swarm does not act on
(``autoAllowBashIfSandboxed``, ``network.allowUnixSockets``, the proxy ports, ...) are accepted
and ignored.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from protocols.errors import Error

EVERY_DOMAIN = "*"  # in allowedDomains: the whole network (else the domains, by a proxy)
# a host name, ``*.`` before it for its subdomains (labels of letters, digits, ``-`` and ``_``)
LABEL = r"[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?"
DOMAIN = re.compile(rf"(\*\.)?{LABEL}(\.{LABEL})*\.?")


class SandboxSettingsError(Error, ValueError):
    """A ``sandbox`` setting of the wrong type; the message names it and what it must be."""


@dataclass(frozen=True)
class SandboxConfig:
    enabled: bool | None = None  # None: not said; the permission mode decides (`sandbox_for`)
    fail_if_unavailable: bool = False
    allow_unsandboxed: bool = True  # allowUnsandboxedCommands: dangerouslyDisableSandbox asks
    excluded_commands: tuple[str, ...] = ()
    allow_write: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    allowed_domains: tuple[str, ...] = ()

    @property
    def network(self) -> bool:
        """Whether sandboxed commands reach the whole network (every domain is allowed)."""
        return EVERY_DOMAIN in self.allowed_domains

    @property
    def domains(self) -> tuple[str, ...]:
        """The domains reached through the sandbox's proxy (none: the network is off, or all
        of it is on)."""
        return () if self.network else self.allowed_domains


def parse_sandbox(value: Any, where: str) -> SandboxConfig:
    """The ``sandbox`` object of one settings file (`where` names it in errors)."""
    if value is None:
        return SandboxConfig()
    _object(value, where)
    filesystem = value.get("filesystem", {})
    network = value.get("network", {})
    _object(filesystem, f"{where}.filesystem")
    _object(network, f"{where}.network")
    return SandboxConfig(
        enabled=_flag(value, "enabled", where, None),
        fail_if_unavailable=bool(_flag(value, "failIfUnavailable", where, False)),
        allow_unsandboxed=bool(_flag(value, "allowUnsandboxedCommands", where, True)),
        excluded_commands=_strings(value, "excludedCommands", where),
        allow_write=_strings(filesystem, "allowWrite", f"{where}.filesystem"),
        deny_write=_strings(filesystem, "denyWrite", f"{where}.filesystem"),
        deny_read=_strings(filesystem, "denyRead", f"{where}.filesystem"),
        allowed_domains=_domains(_strings(network, "allowedDomains", f"{where}.network"), where),
    )


def merge_sandbox(low: SandboxConfig, high: SandboxConfig) -> SandboxConfig:
    """`high` (a later settings file) over `low`: its flags when it says them, lists added."""
    said = {f.name: getattr(high, f.name) for f in dataclasses.fields(high)}
    merged: dict[str, Any] = {}
    for name, value in said.items():
        before = getattr(low, name)
        if isinstance(value, tuple):
            merged[name] = tuple(dict.fromkeys((*before, *value)))
        elif name == "enabled":
            merged[name] = value if value is not None else before
        else:  # flags with a default: a file that does not say it keeps the earlier one
            default = getattr(SandboxConfig(), name)
            merged[name] = value if value != default else before
    return SandboxConfig(**merged)


def _object(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise SandboxSettingsError(f"{where} must be an object, not {type(value).__name__}")


def _flag(value: dict[str, Any], key: str, where: str, default: bool | None) -> bool | None:
    found = value.get(key, default)
    if found is not default and not isinstance(found, bool):
        raise SandboxSettingsError(f"{where}.{key} must be true or false, not {found!r}")
    return found


def _domains(domains: tuple[str, ...], where: str) -> tuple[str, ...]:
    """`domains` if each is one the proxy can match a host name against (else the error names
    it): no scheme, path or port, which would never match and so never allow anything."""
    for domain in domains:
        if not _is_domain(domain):
            raise SandboxSettingsError(
                f"{where}.network.allowedDomains: {domain!r} is not a domain; write example.com, "
                f"*.example.com (its subdomains), an IP address, or {EVERY_DOMAIN!r} (every "
                "domain), without a scheme, a path or a port"
            )
    return domains


def _is_domain(domain: str) -> bool:
    if domain == EVERY_DOMAIN or DOMAIN.fullmatch(domain):
        return True
    try:
        ipaddress.ip_address(domain.strip("[]"))
    except ValueError:
        return False
    return True


def _strings(value: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    found = value.get(key, [])
    if not isinstance(found, list) or not all(isinstance(s, str) and s.strip() for s in found):
        raise SandboxSettingsError(f"{where}.{key} must be a list of non-empty strings")
    return tuple(found)
