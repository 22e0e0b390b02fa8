"""How a plugin is found by its name (model providers, vector stores, graph stores): one
registered here, an installed package's entry point in the kind's group, or
`module:attribute`, which a Ray worker imports as well as the driver."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from graphrag_ray.errors import ConfigError


def find_plugin(kind: str, name: str, registered: dict[str, Any], group: str) -> Any:
    """The `kind` (as a message names it) called `name`: registered, an entry point of
    `group`, or `module:attribute`; else a one-line error listing the known ones."""
    if name in registered:
        return registered[name]
    found = [point for point in entry_points(group=group) if point.name == name]
    if found:
        return found[0].load()
    if ":" in name:
        module, _, attribute = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"{kind} {name!r} cannot be loaded: {exc}") from None
    known = sorted(set(registered) | {point.name for point in entry_points(group=group)})
    raise ConfigError(f"unknown {kind} {name!r}: "
                      f"{'known ones are ' + ', '.join(known) if known else 'none is installed'}"
                      ", or give one as module:attribute")
