"""The settings a run request writes among its names ("…, 3 samples, temp 0.2"): read into
`propose_run`'s `settings`, or, named without a value that can be read, said back rather than
dropped (a run with settings other than those asked for is not the run asked for)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


def _num(group: str) -> str:
    # A number as a whole token: "0.25" is never read as "25", nor "1,000" as "000".
    return rf"(?<![\w.,])(?P<{group}>\d+(?:\.\d+)?|\.\d+)(?![\w]|[.,]\d)"


_IS = r"\s*(?:=|:|of|at|to)?\s*"
# The words that join a setting to the rest: cut with it, so the benchmark's part ends cleanly.
_LEAD = r"(?:[\s,;(]+|^)(?:(?:and|with|using|at|but)\s+)*(?:an?\s+|the\s+)?"
_TAIL = r"\)?(?=[\s,;.!?)]|$)"
_READ: dict[str, re.Pattern[str]] = {
    key: re.compile(_LEAD + "(?:" + pattern + ")" + _TAIL, re.I)
    for key, pattern in {
        "samples": _num("v") + r"\s+samples?(?:\s+(?:per|for each|each|a)\s+question)?"
        r"|samples?" + _IS + _num("w"),
        "temperature": r"(?:temperature|temp)" + _IS + _num("v"),
        "max_tokens": r"max(?:imum)?[\s_-]*(?:new[\s_-]*)?tokens"
        + _IS
        + _num("v")
        + r"|"
        + _num("w")
        + r"\s+max(?:imum)?[\s_-]*tokens",
        "top_p": r"top[\s_-]?p" + _IS + _num("v"),
        "few_shot": _num("v") + r"[\s-]*shots?|few[\s_-]?shots?" + _IS + _num("w"),
    }.items()
}
_WHOLE = frozenset(("samples", "max_tokens", "few_shot"))
# A setting named whose value was not read, or one this planner cannot set at all.
_UNREAD = {
    # Bare "samples" or "temp" may be part of a title ("Lab Samples"): they count with a number.
    "samples": r"\b(?:\d\S*|one|two|three|four|five|six|seven|eight|nine|ten|a few|several"
    r"|many|multiple)\s+samples?\b|\bsamples?\s*[=:]",
    "temperature": r"\btemperature\b|\btemp\s*[=:]?\s*[-+.\d]",
    "max tokens": r"\bmax(?:imum)?[\s_-]*(?:new[\s_-]*)?tokens\b",
    "top p": r"\btop[\s_-]?p\b",
    "few-shot examples": r"\bfew[\s_-]?shots?\b",
    "system prompt": r"\bsystem[\s_-]?prompt\b",
    "stop sequences": r"\bstop[\s_-]?(?:sequences?|words?|tokens?)\b",
    "chain of thought": r"\bchain[\s-]of[\s-]thought\b|\bstep[\s-]by[\s-]step\b",
}


@dataclass(frozen=True)
class RunWords:
    """What a run request set, and the rest of it.

    Attributes:
        settings: the `settings` argument of `propose_run` (only what was asked for).
        unread: the settings named whose value could not be read, in words.
        rest: the request without the settings' words ("MODEL on BENCHMARK").
    """

    settings: dict[str, Any]
    unread: tuple[str, ...]
    rest: str


def read_run_words(phrase: str) -> RunWords:
    """The settings written anywhere in a run request, each cut out of it once read."""
    settings: dict[str, Any] = {}
    rest = phrase
    for key, pattern in _READ.items():
        found = pattern.search(rest)
        if found is None:
            continue
        value = float(found.group("v") or found.group("w"))
        # "1.5 samples" is kept as written: the platform then refuses it by its rule.
        settings[key] = int(value) if key in _WHOLE and value.is_integer() else value
        rest = " ".join((rest[: found.start()] + " " + rest[found.end() :]).split())
    unread = tuple(name for name, said in _UNREAD.items() if re.search(said, rest, re.I))
    return RunWords(settings, unread, rest)


def unread_reply(unread: tuple[str, ...]) -> str:
    """Why nothing was proposed: the settings named but not read, and how to write them."""
    return (
        f"I could not read the {' and '.join(unread)} in your request, so I have proposed "
        "nothing. I can set these for a run: `3 samples`, `temperature 0.2`, `max tokens 256`, "
        "`top p 0.9` and `2-shot`; write each as a number like that, or leave it out for the "
        "defaults."
    )


_SAID = {
    "samples": "{} samples",
    "temperature": "temperature {}",
    "max_tokens": "max tokens {}",
    "top_p": "top p {}",
    "few_shot": "{}-shot",
}


def said(settings: dict[str, Any]) -> str:
    """The settings in words that read back to the same settings, for a choice button."""
    if not settings:
        return ""
    return " with " + ", ".join(_SAID[key].format(f"{value:g}") for key, value in settings.items())
