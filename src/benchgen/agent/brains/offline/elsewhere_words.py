"""The wordings of requests the agent has no tool for, outside A13 (a password, a benchmark's
scoring, cancelling or retrying a run, the credit balance, account details, uploading a dataset,
adding a model; and what only an administrator can do: admin rights, accounts, the server's
set-up): the reply says so and links the page where the user can do it, or says to ask an
administrator (`elsewhere.step_elsewhere`), never "I did not understand"."""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchgen.core.permissions import Action, page_for


@dataclass(frozen=True)
class Place:
    """One such request: how it is worded, what the reply says the agent cannot do, and the
    page (with `{id}` for the run or benchmark it is about, of `target` kind); none for what
    only an administrator can do, whose admin page is linked to administrators alone."""

    pattern: re.Pattern[str]
    cannot: str
    page: str = ""
    target: str = ""
    admin_page: str = ""


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
    # What only an administrator can do: the admin page is linked to administrators only, as
    # it answers anyone else 403.
    "admin": Place(
        re.compile(
            r"\b(?:make|set|give|grant|promote)\b.*\badmin\w*|\badmin\w*\s+(?:rights|role|access"
            r"|privileges?|permissions?)\b",
            re.I,
        ),
        "change account rights",
        admin_page="/admin/users",
    ),
    "accounts": Place(
        re.compile(
            r"\b(?:delete|remove|close|disable|deactivate|suspend|block|enable|reactivate"
            r"|unlock)\s+(?:(?:my|this|the|his|her|their|a|an|\S+@\S+|\w+'s)\s+)*(?:user\s+)?"
            r"accounts?\b"
            r"|\b(?:create|add|make|register|open)\s+(?:(?:a|an|new|another)\s+)*(?:user|account)s?\b",
            re.I,
        ),
        "create, disable or delete accounts",
        admin_page="/admin/users",
    ),
    "server": Place(
        re.compile(
            r"\b(?:allow|enable|disable|turn\s+on|turn\s+off|open|close|change)\b.*"
            r"\b(?:sign[\s-]?ups?|registrations?)\b"
            r"|\b(?:allow|let|enable|permit|disable)\b.*\b(?:the\s+agent|the\s+assistant|you)\s+"
            r"(?:to\s+)?(?:create|edit|publish|train)\b"
            r"|\b(?:change|switch|set)\b.*\b(?:agent|assistant|your)(?:'s)?\s+(?:model|brain)\b"
            r"|\b(?:change|raise|increase|lift|remove|disable)\b.*\b(?:rate\s+limits?"
            r"|creation\s+limits?|turn\s+(?:cap|time\s+limit))\b",
            re.I,
        ),
        "change how this BenchGen server is set up",
        admin_page="/admin/settings",
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
    "account": Place(
        re.compile(
            r"^who\s+am\s+i\b|\bwhat(?:'s|\s+is)\s+my\s+(?:name|e-?mail)\b"
            r"|\bmy\s+(?:e-?mail(?:\s+address)?|profile|display\s+name|user\s*name)\b"
            r"|\bmy\s+account\s+(?:details|settings|info\w*)\b",
            re.I,
        ),
        "show or change your account details from the chat",
        "/settings/account",
    ),
    "dataset": Place(
        re.compile(
            r"\b(?:upload|add|import|create|make)\s+(?:(?:a|an|my|new|the|some|our)\s+)*"
            r"(?:training\s+)?(?:datasets?|data\s+sets?|training\s+data)\b",
            re.I,
        ),
        "upload a dataset from the chat",
        "/datasets",
    ),
    "model": Place(
        re.compile(
            r"\b(?:add|register|connect|create|import|upload|set\s*up|hook\s+up)\s+"
            r"(?:(?:a|an|my|new|the|our|own)\s+)*(?:(?!benchmark|quiz|test)[\w.:-]+\s+){0,3}"
            r"(?:models?|endpoints?|inference\s+servers?)\b",
            re.I,
        ),
        "add a model from the chat",
        "/models/new",
    ),
}


def place_of(lowered: str) -> str | None:
    """Which of these requests `lowered` makes, if any."""
    for key, place in PLACES.items():
        if place.pattern.search(lowered):
            return key
    return None
