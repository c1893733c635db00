"""Replies the platform writes itself, from stored facts: previews, outcomes, limits, failures."""

from __future__ import annotations

import re
from typing import Any

from benchgen.core.text import plural
from benchgen.services.chat.previews import visible
from benchgen.services.chat.proposals import ProposalView

_DONE = {
    "create_benchmark": "Created benchmark {benchmark_id}. It is private until you publish it.",
    "edit_benchmark": "Changed benchmark {benchmark_id}; it is now at version {version}.",
    "publish_benchmark": "Published benchmark {benchmark_id}: everyone can see it now.",
    "change_bundle": "Uploaded the changed bundle: benchmark {benchmark_id} is now at bundle "
    "version {version}.",
    "start_run": "Started run {run_id} (up to {estimated_cost} credits). Ask me "
    '"is it done?" whenever you like: runs do not announce themselves here.',
    "start_training": "Started training job {training_job_id} ({status}; {estimated_credits} "
    "credits reserved, and you pay only for the steps that run). Ask me "
    '"is the training done?" whenever you like: training jobs do not announce themselves here.',
}


# The last words of every proposal's reply.
DECIDE = "Approve to go ahead, or tell me what to change (anything else declines this)."


def proposal_reply(proposal: ProposalView, lead: str = "") -> str:
    """The preview as the user must see it before deciding (A7: rendered from the arguments)."""
    head = lead or "Here is exactly what I would do. Nothing has happened yet."
    return f"{head}\n\n{proposal.preview['text']}\n\n{DECIDE}"


def proposal_buttons(proposal: ProposalView) -> list[dict[str, Any]]:
    """Approve (bound to the proposal's id and preview hash) and decline."""
    approve = {"type": "approve", "proposal_id": proposal.id, "preview_hash": proposal.preview_hash}
    return [
        {"label": "Approve", "action": approve},
        {"label": "Decline", "action": {"type": "decline", "proposal_id": proposal.id}},
    ]


def choice_buttons(turn_id: str, options: list[str]) -> list[dict[str, Any]]:
    """One button per option; each names the question's turn and the option's place."""
    return [
        {"label": label, "action": {"type": "choose", "turn_id": turn_id, "option": index}}
        for index, label in enumerate(options)
    ]


def executed_reply(proposal: ProposalView) -> str:
    """What an approved proposal did, or why it did not happen (A9 re-checks can refuse)."""
    if proposal.status == "executed" and proposal.result is not None:
        return _DONE[proposal.kind].format(**proposal.result)
    error = proposal.error or ""
    # Some refusals (a benchmark changed since the preview) say so themselves.
    said = "" if "nothing was done" in error.lower() else " Nothing was changed."
    return f"Approved, but it did not happen: {error}{said}"


def not_carried_out(proposal: ProposalView, lost_access: bool, cap_s: int) -> str:
    """An approved proposal whose turn stopped before carrying it out (A12): it never will be."""
    why = (
        "your access ended during this turn"
        if lost_access
        else f"this turn reached its time limit ({_duration(cap_s)}) before it could start"
    )
    return (
        f"What you approved was not carried out: {why}. The {proposal.kind.replace('_', ' ')} "
        f"({proposal.id}) did not happen, and nothing was done. Ask me again, or reply "
        "`continue` if it was a part of a benchmark written in parts."
    )


def declined_reply(proposal: ProposalView) -> str:
    """The user declined with the control."""
    return f"Declined. Nothing was done ({proposal.kind.replace('_', ' ')} {proposal.id})."


def declined_note(proposal: ProposalView) -> str:
    """What the brain is told about a proposal the user's new message declined (A12)."""
    return (
        f"Your proposal {proposal.id} ({proposal.kind}) was NOT approved: the user's new message "
        "declined it, so it did not happen. Propose again if the user still wants it."
    )


def expired_note(proposal: ProposalView) -> str:
    """What the brain is told about a proposal nobody approved in time (A12)."""
    return (
        f"Your proposal {proposal.id} ({proposal.kind}) EXPIRED without approval, so it did "
        "not happen. Propose again if the user still wants it."
    )


def too_late_notice(proposal: ProposalView) -> str:
    """What the user is told when their words approve a proposal that had expired (A12): the
    platform says it, whatever the brain makes of the note above."""
    return (
        f"Your approval came too late: the proposal ({proposal.kind.replace('_', ' ')}) expired "
        f"at {proposal.expires_at:%H:%M} UTC and nothing was done. Ask again for a new one."
    )


def capped_reply(cap_s: int) -> str:
    """A18: the turn reached its cap and stopped cleanly."""
    return (
        f"I reached this turn's time limit ({_duration(cap_s)}) and stopped cleanly; nothing is "
        "half-done. Reply `continue` to go on."
    )


def waiting_for_thread(cap_s: int) -> str:
    """A turn queued behind others: nothing has started, and its time limit has not either."""
    return (
        "Waiting for a free agent: all of them are busy with other turns. I start on this as "
        f"soon as one is free, and this turn's time limit ({_duration(cap_s)}) counts from then."
    )


LOST_ACCESS = (
    "I had to stop: your access ended during this turn (the token you chat with was revoked, "
    "or the account was disabled). Nothing more was done."
)
STEP_LIMIT = "I took too many steps on this request and stopped. Nothing more was done."


def going_in_circles(tool: str) -> str:
    """The brain kept making one call with the same arguments, which got it nowhere."""
    return (
        f"I kept repeating the same step ({tool} with the same arguments) without getting "
        "anywhere, so I stopped. Nothing more was done; try asking in other words."
    )


TOO_MANY_CALLS = (
    "I made far more steps than any request needs, so I stopped. Nothing more was done; try "
    "asking for less at a time."
)
INTERNAL_ERROR = "Something went wrong on the server while answering. Nothing more was done."


def brain_misbehaved(brain: str) -> str:
    """The brain kept answering in ways the platform could not use (bad tool arguments…)."""
    return (
        f"The agent's language model ({brain}) kept calling its tools with arguments the "
        "platform refused, so I stopped. Nothing was changed; try asking in other words."
    )


REPLY_CUT = "\n\n[The rest of this reply was cut: it was too long.]"
_MAX_ERROR_CHARS = 300


def brain_failed(brain: str, error: Exception) -> str:
    """A configured brain failed: said plainly, never answered by another brain instead.

    Only the error's kind and the start of its message are shown: a provider's message can be
    long, and it is the only text here not written by the platform.
    """
    # Its own full stop is dropped ("Connection error.." read as a typo), and an empty message
    # leaves the kind alone.
    detail = str(error).strip().rstrip(".")
    if len(detail) > _MAX_ERROR_CHARS:
        detail = detail[:_MAX_ERROR_CHARS] + "…"
    said = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
    return (
        f"The agent's language model ({brain}) failed: {said}. "
        "No other model was used in its place, and nothing was changed."
    )


# What no screen may be handed raw from a model's words (a reply, a button label): control
# characters, which a terminal obeys (ESC sequences recolour it, draw OSC 8 hyperlinks whose
# text hides their target, write the clipboard with OSC 52); direction controls, which reorder
# what follows ("\u202e.ereh nekot ruoy etsap" reads as a request for a token that the A14
# check, reading the stored order, never saw); characters that print as nothing, which glue
# a page path onto another host's name ("https://evil.example\u200b/runs/x" linked /runs/x);
# and tag characters, invisible ASCII that only a language model reads. The joiners that
# emoji and scripts need stay.
_UNSHOWABLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u200b\u200e\u200f\u202a-\u202e"
    "\u2060-\u2069\ufeff\U000e0000-\U000e007f]+"
)


def printable(text: str) -> str:
    """`text` as a page or a terminal may show it: each character above by its code
    (\\u001b), line breaks and tabs kept."""
    return _UNSHOWABLE.sub(lambda found: visible(found.group()), text.replace("\r\n", "\n"))


def _duration(seconds: int) -> str:
    if seconds % 60 == 0:
        minutes = seconds // 60
        return plural(minutes, "minute")
    return f"{seconds} seconds"
