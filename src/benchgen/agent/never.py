"""What the agent can never do (A13), and the refusal that sends the user to the right page."""

from __future__ import annotations

from benchgen.core.config import Settings
from benchgen.core.permissions import Action, page_for

# A13, in the product's words. None of these has a tool or a proposal kind, and none can be
# carried by a turn credential (session-only in the permission vocabulary, or marked agent=False).
NEVER: dict[Action, str] = {
    Action.BENCHMARK_DELETE: "delete a benchmark",
    Action.BENCHMARK_UNPUBLISH: "unpublish a benchmark",
    Action.MODEL_DELETE: "delete a model",
    Action.DATASET_DELETE: "delete a dataset",
    Action.TRAINING_DELETE: "delete a training job",
    Action.RUN_EDIT_SCORE: "edit a run's score by hand",
    Action.PHASES_MANAGE: "add or remove phases or tasks",
    Action.ACCESS_MANAGE: "change collaborators, whitelists or participants",
    Action.JUDGE_CONFIGURE: "set up the AI judge",
    Action.PARTICIPANTS_EMAIL: "email participants",
    Action.BILLING_MANAGE: "handle billing or buy credits",
    Action.TOKENS_MANAGE: "create, read or revoke API tokens",
    Action.LEADERBOARD_MANAGE: "add a run to a leaderboard or take it off",
    Action.NOTIFICATIONS_MANAGE: "set up run notifications (mail or a webhook)",
}
# Never either, though A13 does not list them (docs/permissions.md does): what a person does on
# a benchmark's own pages, and the credential cannot carry (session-only).
SESSION_ONLY: dict[Action, str] = {
    Action.BENCHMARK_JOIN: "join a benchmark",
    Action.RUN_QUOTA_MANAGE: "change a benchmark's run quota",
}
_PHRASES = {**NEVER, **SESSION_ONLY}


def refusal(settings: Settings, action: Action, object_id: str = "") -> str:
    """The agent's answer to a request for a never-action: it cannot, and where the user can."""
    link = settings.link(page_for(action, object_id))
    return (
        f"I can't {_PHRASES[action]}: that is outside what the agent can ever do, "
        f"whatever the request. You can do it yourself in the web app at {link}"
    )


def never_list(settings: Settings) -> str:
    """The never-actions with their pages, one line each, for a brain's instructions."""
    return "\n".join(
        f"- {phrase}: {settings.link(page_for(action))}" for action, phrase in _PHRASES.items()
    )
