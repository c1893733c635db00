"""The wordings of requests the agent has no tool for, outside A13 (a password, admin rights,
a benchmark's scoring, cancelling or retrying a run, the credit balance): the reply says so and
links the page where the user can do it (`elsewhere.step_elsewhere`), never "I did not
understand"."""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchgen.core.permissions import Action, page_for


@dataclass(frozen=True)
class Place:
    """One such request: how it is worded, what the reply says the agent cannot do, and the
    page (with `{id}` for the run or benchmark it is about, of `target` kind)."""

    pattern: re.Pattern[str]
    cannot: str
    page: str
    target: str = ""


PLACES: dict[str, Place] = {
    "cancel_run": Place(
        re.compile(
            r"^(?:cancel|stop|abort|kill|halt|terminate)\s+(?:it|that|this"
            r"|(?:the|my|this|that)\s+(?:\w+\s+)?(?:run|evaluation)|run_\w+)\b(?!.*\btrain)",
            re.I,
        ),
        "cancel a run from the chat",
        "/runs/{id}",
        "run",
    ),
    "retry_run": Place(
        re.compile(
            r"^(?:retry|re-?try)\b|\b(?:re-?run|retry)\s+(?:the\s+)?(?:errors|failed)", re.I
        ),
        "retry a run's errors from the chat",
        "/runs/{id}",
        "run",
    ),
    "scoring": Place(
        # With a verb: "Scoring Basics" may be a title.
        re.compile(
            r"\b(?:change|set|switch|edit|update|configure|make)\b.*\bscor(?:ing|er)\b", re.I
        ),
        "change a benchmark's scoring",
        "/benchmarks/{id}/settings/scoring",
        "bm",
    ),
    "password": Place(
        re.compile(
            r"\b(?:change|reset|set|update|forgot|show|what'?s|what\s+is|my)\b.*\bpass(?:word|wd)s?\b",
            re.I,
        ),
        "change or show your password",
        "/settings/account",
    ),
    "admin": Place(
        re.compile(
            r"\b(?:make|set|give|grant|promote)\b.*\badmin\w*|\badmin\w*\s+(?:rights|role|access"
            r"|privileges?|permissions?)\b",
            re.I,
        ),
        "change account rights; an administrator does it",
        "/admin/users",
    ),
    "balance": Place(
        re.compile(
            r"\bhow\s+(?:many|much)\s+credits?\b|\b(?:credit|my)\s+balance\b"
            r"|\bcredits?\s+(?:do\s+i\s+have|left|remaining)\b",
            re.I,
        ),
        "see your credit balance from the chat",
        page_for(Action.BILLING_MANAGE),
    ),
}


def place_of(lowered: str) -> str | None:
    """Which of these requests `lowered` makes, if any."""
    for key, place in PLACES.items():
        if place.pattern.search(lowered):
            return key
    return None
