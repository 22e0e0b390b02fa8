"""What entity resolution knows of a language's names, as data rather than code: the titles
that lead a name and are not part of it (`honorifics`), who a title says its bearer is
(`honorific_bearers`: MR and MRS BENNET are two people), the ranks and offices a text calls
their holder by alone (`ranks`; `knighted`, `titled`: the titles written before a whole
name, and a titled man's), the words that make a name another thing's (`kind_words`:
UNIVERSITY OF MANITOBA is not MANITOBA; `same_thing_kind_words`: STANFORD UNIVERSITY often is
STANFORD), joiners and legal suffixes, the pronouns that say a name's sex, and whether
nicknames (LIZZY for ELIZABETH, the `nicknames` package's table) apply.

One file per language (`<code>.json` here, its `why` saying what each list is for and what
it leaves out); `resolution.language_data` names those a build uses (English by default),
merged. With none, resolution goes by the names' tokens and the
graph alone. A language is added by its file, no code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Callable

from graphrag_ray.errors import ConfigError

FOLDER = Path(__file__).resolve().parent


@dataclass(frozen=True)
class LanguageData:
    honorifics: frozenset[str] = frozenset()
    honorific_bearers: dict[str, str] = field(default_factory=dict)
    joiners: frozenset[str] = frozenset()
    suffixes: frozenset[str] = frozenset()
    kind_words: frozenset[str] = frozenset()
    same_thing_kind_words: frozenset[str] = frozenset()
    knighted: frozenset[str] = frozenset()
    titled: frozenset[str] = frozenset()
    ranks: frozenset[str] = frozenset()
    pronouns: dict[str, str] = field(default_factory=dict)
    nicknames: bool = False


def available() -> list[str]:
    return sorted(path.stem for path in FOLDER.glob("*.json"))


@lru_cache(maxsize=8)
def load(codes: tuple[str, ...]) -> LanguageData:
    """The data of the languages `codes`, merged (sets joined; a later file's mapping wins)."""
    merged: dict = {}
    for code in codes:
        path = FOLDER / f"{code}.json"
        if not path.is_file():
            raise ConfigError(f"resolution.language_data: no language data {code!r} "
                              f"(there is: {', '.join(available()) or 'none'})")
        data = json.loads(path.read_text(encoding="utf-8"))
        for item in fields(LanguageData):
            value = data.get(item.name)
            if isinstance(value, list):
                merged[item.name] = merged.get(item.name, frozenset()) | frozenset(value)
            elif isinstance(value, dict):
                merged[item.name] = {**merged.get(item.name, {}), **value}
            elif isinstance(value, bool):
                merged[item.name] = merged.get(item.name, False) or value
    return LanguageData(**merged)


DEFAULT = ("en",)
_active: dict = {"codes": DEFAULT, "data": None}  # this process's, set by `use`
_on_change: list[Callable[[], None]] = []


def active() -> LanguageData:
    """The language data resolution uses in this process now (`use`)."""
    data = _active["data"]
    if data is None:
        data = _active["data"] = load(_active["codes"])
    return data


def use(codes: tuple[str, ...] | list[str]) -> None:
    """Resolve with the language data `codes` in this process from now on: the driver at
    the resolution stage's start, each of its tasks in its worker. Caches of what names
    say under the previous data (`on_change`) are emptied."""
    codes = tuple(codes)
    data = load(codes)  # (an unknown code is refused before anything changes)
    if codes != _active["codes"]:
        _active.update(codes=codes, data=data)
        for clear in _on_change:
            clear()


def on_change(cached: Callable) -> Callable:
    """Decorates an `lru_cache`d function whose answers depend on the language data: its
    cache is emptied when the data changes."""
    _on_change.append(cached.cache_clear)
    return cached
