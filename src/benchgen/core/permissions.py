"""The permission vocabulary: scopes, principal kinds, roles, actions and the rule for each action.

This module only *describes* who may do what; `services/access.py` is the one place that decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Scope(StrEnum):
    """What a token or turn credential may carry. Exactly six; nothing else is ever delegable."""

    READ = "read"
    RUNS = "runs"
    CREATE = "create"
    EDIT = "edit"
    PUBLISH = "publish"
    TRAIN = "train"


ALL_SCOPES = frozenset(Scope)

# Scopes an operator can switch off for the agent entirely (`BENCHGEN_AGENT_ALLOW_*`).
AGENT_SWITCHABLE = {
    Scope.CREATE: "agent_allow_create",
    Scope.EDIT: "agent_allow_edit",
    Scope.PUBLISH: "agent_allow_publish",
}


class PrincipalKind(StrEnum):
    """Who is acting, and through which door."""

    WEB = "web"  # a person with a login session
    API = "api"  # a personal API token (bgp_)
    AGENT = "agent"  # a credential minted for one chat turn (bga_)
    CLI = "cli"  # the operator's command line, optionally acting --as a user
    SYSTEM = "system"  # background jobs, with explicit grants only


SESSION_KINDS = frozenset({PrincipalKind.WEB, PrincipalKind.CLI})
DELEGATED_KINDS = frozenset({PrincipalKind.API, PrincipalKind.AGENT})


class Role(StrEnum):
    """A user's relation to a benchmark. A user may hold several at once."""

    OWNER = "owner"
    COLLABORATOR = "collaborator"
    PARTICIPANT = "participant"  # joined: sees questions (never the key), may run
    INVITEE = "invitee"  # not joined yet, but the whitelist admits them
    PUBLIC = "public"  # any signed-in user, on a published benchmark
    LAUNCHER = "launcher"  # launched the run in question (run actions only)


class Target(StrEnum):
    """What an action applies to, which decides how the user's rights are looked up."""

    BENCHMARK = "benchmark"  # rights come from the user's roles on that benchmark
    OWN = "own"  # the user's own account or own objects; ownership checked by the service
    PLATFORM = "platform"  # deployment-wide administration; needs the admin flag
    RUN = "run"  # rights come from roles on the run's benchmark, plus launcher of the run
    JOB = "job"  # background work: only a system principal holding the grant


class Action(StrEnum):
    """Every guarded action. Adding one without a rule (and matrix rows in the tests) fails."""

    BENCHMARK_LIST = "benchmark.list"
    BENCHMARK_READ = "benchmark.read"
    BENCHMARK_READ_KEY = "benchmark.read_key"
    BENCHMARK_CREATE = "benchmark.create"
    BENCHMARK_EDIT = "benchmark.edit"
    BENCHMARK_PUBLISH = "benchmark.publish"
    RUN_LAUNCH = "run.launch"
    RUN_READ = "run.read"
    RUN_READ_DETAIL = "run.read_detail"
    RUN_CANCEL = "run.cancel"
    RUN_RESCORE = "run.rescore"
    RUN_RESCORE_SETTINGS = "run.rescore_settings"
    RUN_REJUDGE = "run.rejudge"
    MODEL_LIST = "model.list"
    MODEL_MANAGE = "model.manage"
    TRAINING_LAUNCH = "training.launch"
    TRAINING_READ = "training.read"
    TRAINING_CANCEL = "training.cancel"
    CREDITS_READ = "credits.read"
    CHAT_USE = "chat.use"
    BENCHMARK_JOIN = "benchmark.join"
    BENCHMARK_UNPUBLISH = "benchmark.unpublish"
    BENCHMARK_DELETE = "benchmark.delete"
    PHASES_MANAGE = "phases.manage"
    ACCESS_MANAGE = "access.manage"
    JUDGE_CONFIGURE = "judge.configure"
    RUN_QUOTA_MANAGE = "run_quota.manage"
    PARTICIPANTS_EMAIL = "participants.email"
    LEADERBOARD_MANAGE = "leaderboard.manage"
    RUN_EDIT_SCORE = "run.edit_score"
    MODEL_DELETE = "model.delete"
    DATASET_CREATE = "dataset.create"
    DATASET_READ = "dataset.read"
    DATASET_DELETE = "dataset.delete"
    TRAINING_DELETE = "training.delete"
    BILLING_MANAGE = "billing.manage"
    TOKENS_MANAGE = "tokens.manage"
    ADMIN_USERS = "admin.users"
    ADMIN_CREDITS = "admin.credits"
    ADMIN_SETTINGS = "admin.settings"
    RUN_EXECUTE = "run.execute"
    TRAINING_EXECUTE = "training.execute"
    CHAT_RECORD = "chat.record"
    MAIL_SEND = "mail.send"
    METRICS_READ = "metrics.read"
    NOTIFICATIONS_MANAGE = "notifications.manage"


@dataclass(frozen=True)
class ActionRule:
    """How one action is guarded.

    `scope` None means session-only: no token or turn credential can ever carry it.
    `page` is the web-app page where a person does it (refusals link there).
    `agent` False: a personal token with the scope may do it, a turn credential never.
    """

    scope: Scope | None
    target: Target
    roles: frozenset[Role] = frozenset()
    page: str = "/"
    summary: str = ""
    agent: bool = True


_R = Role
_READERS = frozenset({_R.OWNER, _R.COLLABORATOR, _R.PARTICIPANT, _R.PUBLIC})
_EDITORS = frozenset({_R.OWNER, _R.COLLABORATOR})
_OWNER = frozenset({_R.OWNER})
_SETTINGS = "/benchmarks/{id}/settings"
_RUN_VIEWERS = frozenset({_R.OWNER, _R.COLLABORATOR, _R.LAUNCHER})


def _delegable(scope: Scope, target: Target, roles: frozenset[Role], summary: str) -> ActionRule:
    return ActionRule(scope, target, roles, "/", summary)


def _session(target: Target, roles: frozenset[Role], page: str, summary: str) -> ActionRule:
    return ActionRule(None, target, roles, page, summary)


B, OWN, P, RUN = Target.BENCHMARK, Target.OWN, Target.PLATFORM, Target.RUN
RULES: dict[Action, ActionRule] = {
    Action.BENCHMARK_LIST: _delegable(Scope.READ, OWN, frozenset(), "list visible benchmarks"),
    Action.BENCHMARK_READ: _delegable(Scope.READ, B, _READERS, "see a benchmark and its questions"),
    Action.BENCHMARK_READ_KEY: _delegable(Scope.READ, B, _EDITORS, "see a benchmark's answer key"),
    Action.BENCHMARK_CREATE: _delegable(Scope.CREATE, OWN, frozenset(), "create a benchmark"),
    Action.BENCHMARK_EDIT: _delegable(Scope.EDIT, B, _EDITORS, "change metadata or questions"),
    Action.BENCHMARK_PUBLISH: _delegable(Scope.PUBLISH, B, _EDITORS, "publish a benchmark"),
    Action.RUN_LAUNCH: _delegable(Scope.RUNS, B, _READERS, "run a model on a benchmark"),
    Action.RUN_READ: _delegable(Scope.READ, RUN, _RUN_VIEWERS, "see a run and its answers"),
    Action.RUN_READ_DETAIL: _delegable(
        Scope.READ, RUN, _EDITORS, "see per-question correctness and expected answers"
    ),
    Action.RUN_CANCEL: _delegable(
        Scope.RUNS, RUN, frozenset({_R.OWNER, _R.LAUNCHER}), "cancel a run"
    ),
    Action.RUN_RESCORE: _delegable(Scope.RUNS, RUN, _RUN_VIEWERS, "rescore a run's saved answers"),
    Action.RUN_RESCORE_SETTINGS: _delegable(
        Scope.RUNS, RUN, _EDITORS, "rescore a run with other scoring settings"
    ),
    # Like launching the run did, it calls the benchmark's AI judge (the owner's key pays): the
    # service also checks that the judge is still open to the person and that they may run.
    Action.RUN_REJUDGE: _delegable(
        Scope.RUNS, RUN, _RUN_VIEWERS, "judge a run's answers whose AI judging failed again"
    ),
    Action.MODEL_LIST: _delegable(Scope.READ, OWN, frozenset(), "list the model catalogue"),
    Action.MODEL_MANAGE: _delegable(Scope.RUNS, OWN, frozenset(), "register or change own models"),
    Action.TRAINING_LAUNCH: _delegable(Scope.TRAIN, OWN, frozenset(), "launch a training job"),
    Action.TRAINING_READ: _delegable(
        Scope.READ, OWN, frozenset(), "see own training jobs and the compute on offer"
    ),
    Action.TRAINING_CANCEL: _delegable(Scope.TRAIN, OWN, frozenset(), "cancel a training job"),
    Action.DATASET_CREATE: _delegable(Scope.TRAIN, OWN, frozenset(), "upload a dataset"),
    Action.DATASET_READ: _delegable(Scope.READ, OWN, frozenset(), "list and read own datasets"),
    Action.CREDITS_READ: _delegable(Scope.READ, OWN, frozenset(), "read own credit ledger"),
    Action.CHAT_USE: _delegable(Scope.READ, OWN, frozenset(), "chat with the agent"),
    Action.BENCHMARK_JOIN: _session(
        B, frozenset({_R.INVITEE, _R.PUBLIC}), "/benchmarks/{id}", "join as a participant"
    ),
    Action.BENCHMARK_UNPUBLISH: _session(B, _OWNER, _SETTINGS, "unpublish a benchmark"),
    Action.BENCHMARK_DELETE: _session(B, _OWNER, _SETTINGS, "delete a benchmark"),
    Action.PHASES_MANAGE: _session(
        B, _OWNER, "/benchmarks/{id}/settings/phases", "add or remove phases and tasks"
    ),
    Action.ACCESS_MANAGE: _session(
        B,
        _OWNER,
        "/benchmarks/{id}/settings/access",
        "manage collaborators, the whitelist and participants",
    ),
    Action.JUDGE_CONFIGURE: _session(
        B, _OWNER, "/benchmarks/{id}/settings/judge", "set up the AI judge"
    ),
    Action.PARTICIPANTS_EMAIL: _session(
        B, _OWNER, "/benchmarks/{id}/participants/email", "email participants"
    ),
    # Session-only like the judge: a token that leaked, or an agent talked round, must not be
    # able to raise the quota that bounds how fast outsiders can probe the answer key.
    Action.RUN_QUOTA_MANAGE: _session(
        B, _OWNER, _SETTINGS, "change how many runs others may make per day"
    ),
    Action.LEADERBOARD_MANAGE: _session(
        RUN, _EDITORS, "/runs/{id}", "add or remove a run on a leaderboard"
    ),
    Action.RUN_EDIT_SCORE: _session(RUN, _OWNER, "/runs/{id}", "correct a run's score by hand"),
    Action.MODEL_DELETE: _session(OWN, frozenset(), "/models/{id}", "delete a model"),
    Action.DATASET_DELETE: _session(OWN, frozenset(), "/datasets/{id}", "delete a dataset"),
    Action.TRAINING_DELETE: _session(OWN, frozenset(), "/training/{id}", "delete a training job"),
    Action.BILLING_MANAGE: _session(OWN, frozenset(), "/settings/billing", "billing and credits"),
    Action.TOKENS_MANAGE: _session(
        OWN, frozenset(), "/settings/tokens", "create, list or revoke API tokens"
    ),
    Action.ADMIN_USERS: _session(P, frozenset(), "/admin", "create and manage user accounts"),
    Action.ADMIN_CREDITS: _session(P, frozenset(), "/admin", "grant credits to users"),
    Action.ADMIN_SETTINGS: _session(P, frozenset(), "/admin", "change deployment settings"),
    Action.RUN_EXECUTE: ActionRule(None, Target.JOB, frozenset(), "/", "execute a queued run"),
    Action.TRAINING_EXECUTE: ActionRule(
        None, Target.JOB, frozenset(), "/", "execute a queued training job"
    ),
    Action.CHAT_RECORD: ActionRule(
        None, Target.JOB, frozenset(), "/", "record how a chat turn ended"
    ),
    Action.MAIL_SEND: ActionRule(None, Target.JOB, frozenset(), "/", "send queued mail"),
    # Granted only to the scrape of /metrics that showed the operator's metrics token.
    Action.METRICS_READ: ActionRule(
        None, Target.JOB, frozenset(), "/", "read queue depth and job ages (operators)"
    ),
    # A webhook sends the user's run results to an address of their choosing: the user sets it
    # in the web app or with their own token, never the agent, whom a hostile text could talk
    # into pointing it elsewhere.
    Action.NOTIFICATIONS_MANAGE: ActionRule(
        Scope.RUNS,
        OWN,
        frozenset(),
        "/settings/notifications",
        "set where run notifications go (mail, webhook)",
        agent=False,
    ),
}


def rule_for(action: Action) -> ActionRule:
    """The rule for `action`; every action in the vocabulary has one."""
    return RULES[action]


def is_session_only(action: Action) -> bool:
    """True when no token or agent credential can ever perform `action`."""
    return RULES[action].scope is None


# Where a person finds an object whose id is not known: the list of its kind. Runs have no page
# of their own kind: the dashboard lists a person's runs (and each benchmark its own).
_LIST_PAGES = {"/runs": "/"}


def page_for(action: Action, object_id: str = "") -> str:
    """The web-app path where a person performs `action`, with the object's id filled in; with
    no id, the page that lists such objects (a path with a gap in it was a link to a 404)."""
    page = RULES[action].page
    if object_id or "{id}" not in page:
        return page.replace("{id}", object_id)
    listed = page.split("/{id}", 1)[0]
    return _LIST_PAGES.get(listed, listed)
