"""Name lookup by fully qualified name or unique dotted suffix, as p4c's STF runner allows.

"MyIngress.ipv4_lpm" can be named "ipv4_lpm" when no other object of that kind ends in
".ipv4_lpm"; an exact full name always wins.
"""

from __future__ import annotations

from typing import Iterable, TypeVar

from .errors import NotFound

T = TypeVar("T")


def resolve(name: str, objects: dict[str, T], kind: str) -> T:
    """The object called `name` (full name or unique suffix); NotFound otherwise."""
    found = objects.get(name)
    if found is not None:
        return found
    matches = [full for full in objects if full.endswith("." + name)]
    if len(matches) == 1:
        return objects[matches[0]]
    if not matches:
        raise NotFound(f"no {kind} named {name!r}")
    raise NotFound(f"{kind} name {name!r} is ambiguous: {', '.join(sorted(matches))}")


def resolve_name(name: str, names: Iterable[str], kind: str) -> str:
    """The full name that `name` designates among `names`."""
    return resolve(name, {n: n for n in names}, kind)
