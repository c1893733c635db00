"""The reply to a request the agent has no tool for, outside A13: it cannot, and the page for
the run or benchmark meant, or, for what only an administrator can do, the admin page to an
administrator and to ask one to anyone else (see `elsewhere_words` for the wordings)."""

from __future__ import annotations

from benchgen.agent.brains.offline.ask import Ask, Step
from benchgen.agent.brains.offline.elsewhere_words import PLACES
from benchgen.agent.brains.offline.naming import find_id, mentioned
from benchgen.agent.brains.offline.parse import Intent

_RUN_ACTIVE = ("queued", "running")
# The user's own facts, which `my_account` reads: answered, not sent elsewhere.
_OWN_FACTS = ("balance", "account")
# No link for anyone else: the admin pages answer everyone but an administrator with a 403.
ADMINISTRATORS = (
    "only an administrator of this BenchGen server can do that, so ask the person who runs it. "
    "If that is you, it is in the admin area of the web app."
)


def step_elsewhere(ask: Ask, intent: Intent) -> Step:
    """Say the agent cannot, with the page for the run or benchmark meant when it is known."""
    place = PLACES[intent.phrase]
    if intent.phrase in _OWN_FACTS:
        return _own_facts(ask, intent.phrase, place.page)
    if not place.page:
        return _for_administrators(ask, place.cannot, place.admin_page)
    object_id = find_id(ask.text, place.target) if place.target else None
    if object_id is None and place.target == "run":
        latest = ask.result("run_status")
        if latest is None:
            return [("run_status", {})]
        run = latest.get("run") or {}
        if intent.phrase == "cancel_run" and run.get("status") not in _RUN_ACTIVE:
            return (
                "No run of yours is in progress, so there is nothing to cancel. Nothing was done."
            )
        object_id = run.get("id")
    if object_id is None and place.target == "bm":
        listed = ask.result("list_benchmarks")
        if listed is None:
            return [("list_benchmarks", {"mine_only": True})]
        named = mentioned(ask.text, listed.get("benchmarks", []), ("title",))
        object_id = named[0]["id"] if len(named) == 1 else None
    page = place.page.replace("{id}", object_id) if object_id else _listing(place.page)
    link = ask.settings.link(page)
    return f"I can't {place.cannot}. You can do it yourself in the web app at {link}"


def _own_facts(ask: Ask, phrase: str, page: str) -> Step:
    """The user's balance, or who they are, read with `my_account`; changing either is done on
    its page, never from the chat."""
    found = ask.result("my_account")
    if found is None:
        return [("my_account", {})]
    account = found["account"]
    link = ask.settings.link(page)
    if phrase == "balance":
        return (
            f"You have {account['credits']} credits. Credits are added on the billing page, not "
            f"from the chat: {link}"
        )
    role = " You are an administrator of this BenchGen server." if account["is_admin"] else ""
    return (
        f"You are signed in as {account['display_name']} ({account['email']}).{role} Change "
        f"your account's details in the web app at {link}"
    )


def _for_administrators(ask: Ask, cannot: str, admin_page: str) -> Step:
    """What only an administrator can do: the admin page for one, else to ask one. The agent
    itself never does it, whoever asks: knowing the flag only decides which page helps."""
    account = ask.result("my_account")
    if account is None:
        return [("my_account", {})]
    if not account["account"]["is_admin"]:
        return f"I can't {cannot}: {ADMINISTRATORS}"
    link = ask.settings.link(admin_page)
    return (
        f"I can't {cannot} from the chat. You are an administrator of this BenchGen server, so "
        f"you can do it yourself in the web app at {link}"
    )


def _listing(page: str) -> str:
    """The page listing such objects, when the one meant is not known ("/runs")."""
    return page.split("/{id}", 1)[0]


STEPS = {"elsewhere": step_elsewhere}
