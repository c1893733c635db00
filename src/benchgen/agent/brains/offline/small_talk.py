"""The replies to messages that need no tool (see `talk_words`): help, thanks, a typed yes
with nothing waiting for approval, "how do I …?" and what a run costs."""

from __future__ import annotations

from collections.abc import Callable

from benchgen.agent.brains.offline import render
from benchgen.agent.brains.offline.ask import Ask, Step
from benchgen.agent.brains.offline.parse import Intent
from benchgen.agent.replies import DECIDE
from benchgen.core.permissions import Action, page_for


def step_talk(ask: Ask, intent: Intent) -> Step:
    """The reply, which needs no tool."""
    if intent.kind == "help":
        return render.help_text()
    if intent.kind == "how_to":
        entries = [entry for entry in render.CAN_DO_ENTRIES if intent.phrase in entry]
        return "Here is how, in words I understand:\n" + "\n".join(entries)
    if intent.kind == "price":
        billing = ask.settings.link(page_for(Action.BILLING_MANAGE))
        return (
            "What a run costs depends on the model and the number of questions: `list models` "
            "shows each model's price (the built-in baselines are free), and every run I "
            "propose shows its estimated credits before anything starts. Your balance is at "
            f"{billing}"
        )
    declined = _declined(ask)
    if intent.kind == "assent":
        return (
            "There is nothing waiting for your approval now, so nothing was done: a proposal "
            "is approved only by the message right after it is shown. Tell me what to do next, "
            "or `help` for what I can do."
        )
    return f"You're welcome.{declined} Tell me what to do next, or `help` for what I can do."


def _declined(ask: Ask) -> str:
    """Thanks typed after a proposal declined it (anything but approving does): say so, as the
    user may take it for done."""
    replies = [text for who, text in ask.history if who == "agent"]
    if replies and replies[-1].rstrip().endswith(DECIDE):
        return " The change I showed last was not approved, so it did not happen."
    return ""


STEPS: dict[str, Callable[[Ask, Intent], Step]] = {
    kind: step_talk for kind in ("help", "thanks", "assent", "how_to", "price")
}
