"""Matching the names a request writes to the entries a tool listed: ids typed, titles and
model names by their words, one rule for the planner's picks and the preview's."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from benchgen.agent.brains.offline.forms import read_part
from benchgen.agent.brains.offline.run_words import read_run_words

MODEL_KEYS = ("name", "endpoint_model", "id")
TITLE_KEYS = ("title", "id")
_ID = re.compile(r"\b(?P<kind>bm|mdl|run|ds|tr|train)_[A-Za-z0-9_]+")
_STOP = frozenset(
    (
        *("the", "a", "an", "my", "our", "your", "me", "this", "that", "it", "its", "one"),
        *("model", "models", "benchmark", "benchmarks", "please", "called", "named", "titled"),
        *("of", "for", "to", "and"),
    )
)


def find_id(text: str, kind: str) -> str | None:
    """The first id of `kind` (bm, mdl, run…) written in `text`: ids in the request win."""
    for found in _ID.finditer(text):
        if found.group("kind") == kind:
            return found.group(0)
    return None


def any_id(text: str) -> bool:
    """Whether `text` names anything by its id."""
    return _ID.search(text) is not None


def words(text: str) -> frozenset[str]:
    """The words of a name that matter for matching it, in any script, accents aside ("cafe"
    names "Café", "日本語テスト" itself)."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not _mark(c))
    return frozenset(w for w in re.findall(r"[^\W_]+", bare) if w not in _STOP)


def _mark(char: str) -> bool:
    return unicodedata.category(char) == "Mn"


def find(phrase: str, entries: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """Entries the phrase names, best first in kind: a name typed exactly wins; else the
    entries whose whole name the phrase holds or whose name holds every word of the phrase,
    those accounting for most of its words winning ("world capitals" names "World Capitals and
    Geography", not "Capitals"). Several when it is unclear, so the caller asks; empty when the
    phrase names nothing."""
    wanted = words(phrase)
    if not wanted:
        return []
    scored = [(_match(wanted, entry, keys), entry) for entry in entries]
    exact = [entry for (covered, kind), entry in scored if kind == "exact"]
    if exact:
        return exact
    best = max((covered for (covered, kind), _ in scored if kind == "whole"), default=0)
    # A name that only shares some of the words is never proposed alone; but when it explains
    # more of them than the best whole match, the user is asked between them.
    return [
        entry
        for (covered, kind), entry in scored
        if (covered == best > 0 and kind == "whole") or (covered > best > 0 and kind == "some")
    ]


def _match(wanted: frozenset[str], entry: dict[str, Any], keys: tuple[str, ...]) -> tuple[int, str]:
    """How many of the wanted words the entry's best name accounts for, and how: its name is
    them exactly, is among them or holds them all ("whole"), or shares some ("some")."""
    best = (0, "none")
    for key in keys:
        name = words(str(entry.get(key) or ""))
        covered = len(name & wanted)
        if not name or not covered:
            continue
        kind = (
            "exact" if name == wanted else "whole" if name <= wanted or wanted <= name else "some"
        )
        rank = ("none", "some", "whole", "exact").index
        best = max(best, (covered, kind), key=lambda m: (rank(m[1]), m[0]))
    return best


MAX_NAMING_WORDS = 100
MAX_NAME_WORDS = 6


def names(text: str, entry_id: str, entries: list[dict[str, Any]], keys: tuple[str, ...]) -> bool:
    """Whether `text` names the entry as `find` reads a name: some run of its whole words (a
    run's settings and subset cut out, so "first 5 questions" names no "first choice") that
    only this entry's name holds. "random" names "Baseline: seeded random" when no other model
    is random; "gpt-4o-mini" names neither "GPT-4" nor "mini". One rule for the planner's pick
    and the preview's "the agent picked this model"."""
    rest = read_part(read_run_words(text).rest).phrase
    said = rest.split()[:MAX_NAMING_WORDS]
    names_of = [
        (entry.get("id"), [words(str(entry.get(k) or "")) for k in keys]) for entry in entries
    ]
    for size in range(1, MAX_NAME_WORDS + 1):
        for start in range(len(said) - size + 1):
            wanted = words(" ".join(said[start : start + size]))
            holders = {id_ for id_, held in names_of if wanted and any(wanted <= n for n in held)}
            if holders == {entry_id}:
                return True
    return False


def mentioned(
    text: str, entries: list[dict[str, Any]], keys: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Entries whose whole name appears in `text`; the longest names win."""
    wanted = words(text)
    scored = []
    for entry in entries:
        names = [words(str(entry.get(key) or "")) for key in keys]
        sizes = [len(name) for name in names if name and name <= wanted]
        if sizes:
            scored.append((max(sizes), entry))
    best = max((size for size, _ in scored), default=0)
    return [entry for size, entry in scored if size == best]
