"""The wordings of messages that need no tool: help in its many forms, thanks, a typed yes
with nothing waiting for approval, "how do I …?" and what a run costs."""

from __future__ import annotations

import re

from benchgen.agent.messages import is_assent

_HELP = re.compile(
    r"^(?:help|\?|hi|hello|hey|commands|menu|what can (?:you|u) do|what do (?:you|u) do"
    r"|how do i use you"
    r"|what can you help(?: me)?(?: with)?|how can you help(?: me)?|how does (?:this|it) work"
    r"|who are you|what are you|what is this|what's this|what is benchgen|what's benchgen"
    r"|i need help|i'm lost|where do i start|how do i start|getting started|get started)"
    r"(?: for me)?[.!?]*$",
    re.I,
)
_THANKS = re.compile(
    r"^(?:(?:thanks|thank you|thx|ty|cheers|great|cool|nice|perfect|awesome|good)"
    r"(?:\s+(?:so much|a lot|very much))?[\s,.!]*)+$",
    re.I,
)
_HOW_TO = re.compile(
    r"^(?:how\s+(?:do|can|could|should|would)\s+(?:i|you|we|one)|how\s+to"
    r"|is\s+it\s+possible\s+to|what(?:'s|\s+is)\s+the\s+way\s+to)\s+(?P<verb>[\w-]+)",
    re.I,
)
_PRICE = re.compile(
    r"\bhow\s+much\b.*\b(?:cost|costs|charge|pay)\b|\b(?:price|prices|pricing)\b"
    r"|\bwhat\s+does\b.*\bcost\b|\bis\s+(?:it|this|running)\s+free\b",
    re.I,
)
# The verbs of "how do I …?" and the words of the entries of `render.CAN_DO_ENTRIES` that say how.
_TOPICS = {
    **dict.fromkeys(("create", "make", "build", "write", "add"), "create a qa"),
    **dict.fromkeys(("run", "evaluate", "test", "try", "launch", "benchmark"), "run a model"),
    **dict.fromkeys(("publish", "share"), "publish a benchmark"),
    **dict.fromkeys(("rename", "edit", "change", "update", "fix", "remove"), "change a benchmark"),
    **dict.fromkeys(("train", "fine-tune", "finetune"), "fine-tune"),
    **dict.fromkeys(("compare",), "compare runs"),
    **dict.fromkeys(("check", "see", "know"), "check a run"),
    **dict.fromkeys(("list", "find"), "list your"),
}


def early_talk(lowered: str, text: str) -> tuple[str, str] | None:
    """The kind (and for `how_to` the words of the help entries meant) of thanks, a typed
    yes, or "how do I …?" about a request the planner knows."""
    if is_assent(text):
        return ("assent", "")
    if _THANKS.match(lowered):
        return ("thanks", "")
    how = _HOW_TO.match(lowered)
    if how and how.group("verb") in _TOPICS:
        return ("how_to", _TOPICS[how.group("verb")])
    return None


def late_talk(lowered: str) -> tuple[str, str] | None:
    """The kind of a request for help, or for what runs cost, once no other reading fits."""
    if _HELP.match(lowered) or not lowered:
        return ("help", "")
    if _PRICE.search(lowered):
        return ("price", "")
    return None
