"""A second request written after a title ("… called Space Quiz and run random on it", "rename X
to Space Quiz and publish it"): where the title ends, so the request is never glued into it."""

from __future__ import annotations

import re

# The requests the planner reads, as their verbs go on in a sentence: in lower case. A title's
# own words are capitalised ("Build and Run"), and titles without a verb after "and" ("Science
# and Nature") are never cut.
_VERBS = (
    *("publish", "run", "evaluate", "test", "try", "launch", "start", "share", "show", "list"),
    *("train", "fine-tune", "delete", "remove", "describe", "rename", "make", "change", "set"),
    *("create", "compare", "check", "tell me", "give me", "add"),
)
_NEXT = re.compile(
    r"\s*,?\s+(?i:and|then)\s+(?:(?i:then|also|please)\s+)?(?P<next>(?:"
    + "|".join(re.escape(verb) for verb in _VERBS)
    + r")\b.*)$"
)
# "… called Space Quiz and add these questions:" goes on with the same request.
_SAME_REQUEST = re.compile(r"^(?:add|include)\s+(?:\w+\s+){0,3}questions?\b", re.I)


def split_off(title: str) -> tuple[str, str]:
    """The title, and the second request written after it ("" when there is none)."""
    found = _NEXT.search(title)
    if found is None:
        return title, ""
    then = "" if _SAME_REQUEST.match(found.group("next")) else found.group("next")
    return title[: found.start()], then.strip(" :;,.!")


def following(rest: str) -> str:
    """The second request that `rest`, the words right after a title, starts with, or ""."""
    found = _NEXT.match(rest.splitlines()[0] if rest.strip() else "")
    if found is None or _SAME_REQUEST.match(found.group("next")):
        return ""
    return found.group("next").strip(" :;,.!")
