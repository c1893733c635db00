"""The wordings of the offline planner's later requests: comparing runs, explaining one item,
editing a benchmark (rename, description, add, replace or remove questions), and the part of a
benchmark a run should ask (its subset)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from benchgen.agent.brains.offline.number_words import COUNT, count_of
from benchgen.agent.brains.offline.second_requests import split_off

_ORDINALS = [
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
]
_NUMBER = r"(?:\d{1,6}|" + "|".join(_ORDINALS) + r"|last)"
_QUOTES = " \"'“”‘’«»"

# --- comparing and explaining ----------------------------------------------------------------

_COMPARE = re.compile(
    r"\bcompar(?:e|es|ed|ing|ison)\b|\bdiff(?:erence)?\s+between\b"
    r"|\b(?:last|latest|recent|newest)\s+two\s+runs\b",
    re.I,
)
_BETTER = re.compile(r"\b(?:better|worse)\s+than\b", re.I)
_RUN_ID = re.compile(r"\brun_[A-Za-z0-9_]+")
_EXPLAIN = re.compile(
    r"\b(?:why|explain|how come|what happened|what did)\b.*?"
    r"(?:\b(?:question|q|item|number|no\.?)\s*#?\s*(?P<n>\d{1,7})\b|#(?P<h>\d{1,7})\b"
    r"|\b(?P<o>\d{1,7})(?:st|nd|rd|th)\s+(?:question|item)\b)",
    re.I,
)

# --- edits -----------------------------------------------------------------------------------

_END = r"\s*[.!?]*\s*$"
_RENAMES = [
    re.compile(
        r"^(?:rename|retitle)\s+(?P<bm>.+?)\s+(?:to|as|into)\s*:?\s+(?P<new>.+?)" + _END, re.I
    ),
    re.compile(
        r"^(?:change|set|update|edit|make)\s+(?:the\s+)?(?:title|name)\s+(?:of|for|on)\s+"
        r"(?P<bm>.+?)\s+(?:to|into)\s*:?\s+(?P<new>.+?)" + _END,
        re.I,
    ),
    re.compile(
        r"^(?:change|set|update|edit)\s+(?P<bm>.+?)'s\s+(?:title|name)\s+to\s*:?\s+(?P<new>.+?)"
        + _END,
        re.I,
    ),
]
_DESCRIPTIONS = [
    re.compile(
        r"^(?:change|set|update|edit|replace|make)\s+(?:the\s+)?description\s+(?:of|for|on)\s+"
        r"(?P<bm>.+?)\s+(?:to|as|into|with)\s*:?\s+(?P<new>.+?)\s*$",
        re.I,
    ),
    re.compile(
        r"^(?:change|set|update|edit)\s+(?P<bm>.+?)'s\s+description\s+to\s*:?\s+(?P<new>.+?)\s*$",
        re.I,
    ),
    re.compile(r"^describe\s+(?P<bm>.+?)\s+as\s*:?\s+(?P<new>.+?)\s*$", re.I),
]
_REMOVE = re.compile(
    r"^(?:remove|delete|drop|take out|erase|get rid of)\s+(?:the\s+)?questions?\s+"
    r"(?:numbers?\s+|no\.?\s*)?(?P<nums>#?\d{1,6}(?:(?:\s*,\s*|\s+and\s+|\s*&\s*|\s+)#?\d{1,6})*)"
    r"\s+(?:from|of|in)\s+(?P<bm>.+?)"
    + _END
    + r"|^(?:remove|delete|drop|take out|erase|get rid of)\s+the\s+(?P<ord>"
    + _NUMBER
    + r")(?:st|nd|rd|th)?\s+question\s+(?:from|of|in)\s+(?P<bm2>.+?)"
    + _END,
    re.I,
)
_SOME = r"(?:(?:these|this|the|following|new|more|extra|some|a few|\d+)\s+)*"
_ADD = re.compile(
    r"^(?:add|append|put|insert|include)\s+" + _SOME + r"questions?\s+(?:to|into|in|on)\s+"
    r"(?P<bm>.+?)\s*[:.]?\s*$"
    r"|^(?:add|append)\s+to\s+(?P<bm2>.+?)\s*(?:,\s*)?(?:the following|these)?\s*(?:questions?)?"
    r"\s*[:.]?\s*$",
    re.I,
)
_REPLACE = re.compile(
    r"^(?:replace|swap|overwrite)\s+(?:all\s+)?(?:of\s+)?(?:the\s+)?questions?\s+(?:of|in|from|on)\s+"
    r"(?P<bm>.+?)\s+(?:with|by)\s*" + _SOME + r"(?:questions?)?\s*[:.]?\s*$"
    r"|^(?:set|change)\s+(?:the\s+)?questions\s+(?:of|in|for)\s+(?P<bm2>.+?)\s+to\s*"
    + _SOME
    + r"(?:questions?)?\s*[:.]?\s*$",
    re.I,
)


@dataclass(frozen=True)
class Form:
    """One of these requests as read: its kind, the words naming the benchmark, and the rest.

    Attributes:
        kind: compare, explain, rename, describe, remove_questions, add_questions or
            replace_questions.
        phrase: the words that name the benchmark (edits) or the request itself.
        new: the new title or description.
        numbers: question numbers as people count them (from 1); -1 for "the last".
        runs: run ids named, in the order the comparison takes them (A, then B).
        then: a second request written after the new title, to be asked on its own.
    """

    kind: str
    phrase: str = ""
    new: str = ""
    numbers: tuple[int, ...] = ()
    runs: tuple[str, ...] = ()
    then: str = ""


def read_form(plain: str) -> Form | None:
    """The request `plain` (polite words already stripped) makes, when it is one of these."""
    return _read_edit(plain) or _read_insight(plain)


def read_questions_header(header: str) -> Form | None:
    """An add or replace request in the words before the questions of a message."""
    flat = " ".join(header.split())
    for kind, pattern in (("add_questions", _ADD), ("replace_questions", _REPLACE)):
        found = pattern.match(flat)
        if found:
            return Form(kind, phrase=found.group("bm") or found.group("bm2") or "")
    return None


def _read_edit(plain: str) -> Form | None:
    for kind, patterns in (("rename", _RENAMES), ("describe", _DESCRIPTIONS)):
        for pattern in patterns:
            found = pattern.match(plain)
            if found:
                new, then = found.group("new"), ""
                if kind == "rename":
                    # "rename X to Space Quiz and publish it": the title ends before "and".
                    new, then = split_off(new)
                return Form(kind, phrase=found.group("bm"), new=unquoted(new), then=then)
    removed = _REMOVE.match(plain)
    if removed:
        if removed.group("nums"):
            numbers = tuple(int(n) for n in re.findall(r"\d+", removed.group("nums")))
            return Form("remove_questions", phrase=removed.group("bm"), numbers=numbers)
        return Form(
            "remove_questions", phrase=removed.group("bm2"), numbers=(ordinal(removed["ord"]),)
        )
    return read_questions_header(plain)


def _read_insight(plain: str) -> Form | None:
    explained = _EXPLAIN.search(plain)
    if explained:
        number = explained.group("n") or explained.group("h") or explained.group("o")
        return Form("explain", phrase=plain, numbers=(int(number),))
    runs = tuple(dict.fromkeys(_RUN_ID.findall(plain)))
    better = _BETTER.search(plain)
    if better and runs:
        # "is B better than A?": A, after "than", is the reference the difference is taken from.
        return Form("compare", phrase=plain, runs=runs[::-1] if len(runs) == 2 else runs)
    if _COMPARE.search(plain):
        return Form("compare", phrase=plain, runs=runs)
    return None


def ordinal(word: str) -> int:
    """A question's number from "3", "third" or "last" (-1)."""
    lowered = word.casefold()
    if lowered == "last":
        return -1
    if lowered in _ORDINALS:
        return _ORDINALS.index(lowered) + 1
    return int(lowered)


def unquoted(text: str) -> str:
    """`text` without the quotes around it, if it has them."""
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] in _QUOTES and stripped[-1] in _QUOTES:
        return stripped[1:-1].strip()
    return stripped


# --- subsets ---------------------------------------------------------------------------------

_ITEMS = r"(?:\s+(?:questions?|items?|ones?))"
_HOW = r"(?:ly\s+(?:chosen|picked|drawn|selected))?"
_TAG = r"[\"'“‘]?[\w:.+-]+[\"'”’]?"
_TAGS = _TAG + r"(?:\s*(?:,|\bor\b|\band\b|,\s*or\b|,\s*and\b)\s*" + _TAG + r")*"
_CORES = {
    "first": r"(?:the\s+)?first\s+(?P<n>" + COUNT + ")" + _ITEMS + "?",
    "random": r"(?:an?\s+|the\s+)?(?:random" + _HOW + r"\s+(?:sample\s+of\s+)?(?P<n>" + COUNT + ")"
    r"|(?P<m>" + COUNT + r")\s+random" + _HOW + ")" + _ITEMS + "?",
    "tags": r"(?:the\s+)?(?:questions?|items?|ones?)\s+(?:tagged|with\s+(?:the\s+)?tags?"
    r"|labell?ed)\s+(?P<tags>" + _TAGS + ")",
    "count": r"(?P<n>" + COUNT + ")" + _ITEMS,
}
_BEFORE = r"\b(?:(?:just|only)\s+)?"
_PREFIX = {
    kind: re.compile(_BEFORE + core + r"\s+(?:of|from|in)\s+", re.I)
    for kind, core in _CORES.items()
}
_SUFFIX = {
    kind: re.compile(
        r"[\s,;(]+(?:(?:but|and)\s+)?(?:(?:on|with|using|for|over)\s+)?(?:(?:just|only)\s+)?"
        + core
        + r"(?:\s+only)?\)?"
        # The part may end the request or one of its comma-separated pieces ("…, first 5
        # questions, 3 samples").
        + r"(?:\s*[,;]|"
        + _END
        + ")",
        re.I,
    )
    for kind, core in _CORES.items()
}
_SEED = re.compile(
    r"[\s,;(]*\b(?:(?:with|using)\s+)?(?:(?:the|a|random)\s+)?seed\s*(?:=|:|of)?\s*"
    r"(?P<seed>\d{1,10})\)?",
    re.I,
)
# A part no subset can be: said back rather than run on the whole benchmark (or, for "the last
# 5", read as the first 5).
_NO_SUBSET = re.compile(
    r"\b(?:last|final)\s+(?:" + COUNT + r"|few|couple)\s+(?:questions?|items?|ones?|of|from|in)\b"
    r"|\bhalf\s+(?:of\b|the\s+questions)"
    r"|\b\d{1,3}\s*(?:%|percent\b)|\b(?:few|couple\s+of|several|handful\s+of)\s+(?:random\s+)?"
    r"(?:questions|items)\b",
    re.I,
)
_TAG_SPLIT = re.compile(r"\s*,\s*(?:(?:or|and)\s+)?|\s+(?:or|and)\s+", re.I)
MAX_SEED = 2**31 - 1


@dataclass(frozen=True)
class Part:
    """The part of a benchmark a run request asks for.

    Attributes:
        subset: the `subset` argument of `propose_run`, or None for the whole benchmark.
        phrase: the request without the subset's words ("MODEL on BENCHMARK").
        said: the subset in words that read back to the same subset, to put before the
            benchmark in a button ("the first 20 questions of ").
    """

    subset: dict[str, Any] | None
    phrase: str
    said: str = ""
    problems: list[str] = field(default_factory=list)


def read_part(phrase: str) -> Part:
    """The subset a run request's words ask for: the first N, a seeded random N (seed 0
    unless one is given) or the questions with some tags."""
    unread = _NO_SUBSET.search(phrase)
    if unread:
        said = f'"{unread.group(0)}" (I can run the first N, a random N or the questions tagged T)'
        return Part(None, phrase, problems=[said])
    # A seed may sit anywhere ("…with seed 3"); it belongs to a random subset only.
    seeded = _SEED.search(phrase)
    unseeded = _cut(phrase, seeded) if seeded else phrase
    seed = int(seeded.group("seed")) if seeded else 0
    for kind in _CORES:
        words = unseeded if kind == "random" else phrase
        for pattern in (_PREFIX[kind], _SUFFIX[kind]):
            found = pattern.search(words)
            if found:
                return _part(kind, found, _cut(words, found), seed)
    return Part(None, phrase)


def _cut(text: str, found: re.Match[str]) -> str:
    return " ".join((text[: found.start()] + " " + text[found.end() :]).split())


def _part(kind: str, found: re.Match[str], rest: str, seed: int) -> Part:
    if kind == "tags":
        tags = [t.strip(_QUOTES) for t in _TAG_SPLIT.split(found["tags"])]
        tags = list(dict.fromkeys(t for t in tags if t))
        said = f"the questions tagged {', '.join(tags)} of "
        return Part({"kind": "tags", "tags": tags}, rest, said)
    n = count_of(found.group("n") or found.groupdict().get("m") or "0")
    if kind != "random":
        return Part({"kind": "first", "n": n}, rest, f"the first {n} questions of ")
    problems = [] if seed <= MAX_SEED else [f"the seed must be at most {MAX_SEED}"]
    said = f"a random {n} with seed {seed} of "
    return Part({"kind": "random", "n": n, "seed": seed}, rest, said, problems)
