"""Benchmarks: create, read with visibility, change (one shape for preview and edit), publish,
unpublish, delete, and freezing the questions once a run is accepted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, func, select, update

from benchgen.core.clock import iso_utc
from benchgen.core.context import Context
from benchgen.core.errors import Conflict, Frozen, InvalidInput, invalid, invalid_all
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action, Role
from benchgen.core.statuses import RUN_ACTIVE
from benchgen.core.text import name_problem
from benchgen.db.tables import Benchmark, Question, Run
from benchgen.services import access, audit
from benchgen.services.accounts import ratelimits
from benchgen.services.benchmarks import _question_store, edit_tags, phases, questions
from benchgen.services.keysets import Newest, newest_first
from benchgen.services.specs import (
    MAX_LIST,
    MAX_QUESTIONS,
    BenchmarkChange,
    BenchmarkIn,
    QuestionIn,
    check_window,
    parse,
)

FROZEN_FORMATS = frozenset({"qa", "mcq"})
SECTIONS = ("all", "mine", "shared", "published")


@dataclass(frozen=True)
class BenchmarkView:
    """A benchmark as the acting principal may see it."""

    id: str
    title: str
    description: str
    format: str
    visibility: str
    owner_id: str
    version: int
    question_count: int
    questions_frozen: bool
    created_door: str
    created_at: datetime
    updated_at: datetime
    published_at: datetime | None
    roles: list[str]
    can_see_key: bool


@dataclass(frozen=True)
class Created:
    """A new benchmark and the warnings (e.g. duplicate prompts) found on the way."""

    benchmark: BenchmarkView
    warnings: list[dict[str, Any]]


@dataclass(frozen=True)
class ChangePreview:
    """What a change would do, validated against the benchmark as it is now."""

    benchmark_id: str
    metadata: dict[str, dict[str, str]]
    questions: dict[str, Any] | None
    version_before: int
    version_after: int
    warnings: list[dict[str, Any]]


@dataclass(frozen=True)
class Invitation:
    """What someone the whitelist admits may see of a private benchmark before joining."""

    id: str
    title: str
    description: str
    format: str


def create_benchmark(ctx: Context, data: BenchmarkIn | dict[str, Any]) -> Created:
    """Create a qa or mcq benchmark owned by the acting user, with one phase and one task.

    Raises:
        PermissionDenied: the principal may not create benchmarks.
        InvalidInput: bad shape or questions; every problem with its place.
        RateLimited: API/agent creation limit reached (10 a day, 3 a minute, shared).
    """
    access.require(ctx, Action.BENCHMARK_CREATE)
    spec = parse(BenchmarkIn, data)
    checked = check_new(spec)
    benchmark_id = new_id("bm")
    ratelimits.consume_creation(ctx, benchmark_id)
    now = ctx.now()
    owner_id = ctx.principal.user_id
    assert owner_id is not None  # creating is an own-account action: a user is acting
    row = Benchmark(
        id=benchmark_id,
        owner_id=owner_id,
        title=spec.title,
        description=spec.description,
        format=spec.format,
        visibility="private",
        scoring={},
        created_door=ctx.principal.door,
        version=1,
        created_at=now,
        updated_at=now,
    )
    ctx.session.add(row)
    ctx.session.flush()
    _question_store.replace_questions(ctx, benchmark_id, checked.questions)
    phases.create_default_phase(ctx, row)
    audit.record(
        ctx,
        audit.AuditAction.BENCHMARK_CREATE,
        "benchmark",
        benchmark_id,
        title=spec.title,
        format=spec.format,
        questions=len(checked.questions),
    )
    return Created(_view(ctx, row), checked.warnings)


def get_benchmark(ctx: Context, benchmark_id: str) -> BenchmarkView:
    """One benchmark, if the principal may see it.

    Raises:
        NotFound: missing, deleted, or private and not shared with the user.
        PermissionDenied: the token lacks the read scope.
    """
    return _view(ctx, access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ))


def get_benchmark_for(ctx: Context, benchmark_id: str, action: Action) -> BenchmarkView:
    """One benchmark, if the principal may do `action` on it: a page that only offers that
    action (a settings page) is shown only to those the action is open to.

    Raises:
        NotFound: not visible to the principal.
        PermissionDenied: visible, but `action` is not allowed (the message says why).
    """
    return _view(ctx, access.require_benchmark(ctx, benchmark_id, action))


def get_invitation(ctx: Context, benchmark_id: str) -> Invitation:
    """The title and description of a benchmark the principal may join.

    Raises:
        NotFound: the principal may not join it (nor know it exists).
        PermissionDenied: already on it, or a token or the agent asked (joining is web only).
    """
    row = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_JOIN)
    return Invitation(row.id, row.title, row.description, row.format)


def list_benchmarks(
    ctx: Context,
    mine_only: bool = False,
    search: str = "",
    limit: int = 50,
    offset: int = 0,
    section: str = "all",
    after: Newest | None = None,
) -> list[BenchmarkView]:
    """Benchmarks the principal may see: own, collaborating, joined, and (unless `mine_only`)
    published ones; newest first. `section` narrows them to one of SECTIONS: `mine` (owned),
    `shared` (someone else's, as collaborator or participant) or `published`. `after` starts
    the window after that benchmark's key, `offset` after that many.

    Raises:
        PermissionDenied: the token lacks the read scope.
        InvalidInput: limit outside 1..MAX_LIST, a negative offset, or an unknown section.
    """
    access.require(ctx, Action.BENCHMARK_LIST)
    check_window(limit, offset, MAX_LIST)
    if section not in SECTIONS:
        raise invalid(["section"], f"choose one of {', '.join(SECTIONS)}")
    visible = access.visible_benchmarks(ctx, public=not mine_only and section != "shared")
    query = select(Benchmark).where(visible)
    if section == "mine":
        query = query.where(Benchmark.owner_id == ctx.principal.user_id)
    elif section == "shared":
        query = query.where(Benchmark.owner_id != ctx.principal.user_id)
    elif section == "published":
        query = query.where(Benchmark.visibility == "published")
    if search.strip():
        query = query.where(Benchmark.title.ilike(f"%{_escape_like(search.strip())}%", escape="\\"))
    query = newest_first(query, Benchmark.created_at, Benchmark.id, after)
    return _views(ctx, list(ctx.session.scalars(query.limit(limit).offset(offset))))


def _views(ctx: Context, rows: list[Benchmark]) -> list[BenchmarkView]:
    """Views of a page of benchmarks the caller may see, in a fixed number of queries."""
    user = access.live_user(ctx)
    roles = access.roles_on_many(ctx, user, rows) if user else {}
    counted = (
        select(Question.benchmark_id, func.count())
        .where(Question.benchmark_id.in_([row.id for row in rows]))
        .group_by(Question.benchmark_id)
    )
    counts = {key: int(n) for key, n in ctx.session.execute(counted)}
    return [_view(ctx, row, roles.get(row.id, frozenset()), counts.get(row.id, 0)) for row in rows]


def list_questions(
    ctx: Context,
    benchmark_id: str,
    limit: int = MAX_QUESTIONS,
    offset: int = 0,
    after: int | None = None,
) -> list[dict[str, Any]]:
    """A window of the questions in order (all of them by default), starting after position
    `after` when given; answers only for the owner and collaborators.

    Raises:
        NotFound: not visible to the principal.
        PermissionDenied: the token lacks the read scope.
        InvalidInput: limit outside 1..MAX_QUESTIONS + 1, or a window starting before the first.
    """
    row = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ)
    # Positions run from 0 without gaps (an edit replaces them all), so the question after
    # position p is the one at offset p + 1.
    start = offset if after is None else after + 1
    # One more than a benchmark can hold: a pager asks for a row beyond its page.
    check_window(limit, start, MAX_QUESTIONS + 1)
    with_key = access.can(ctx, Action.BENCHMARK_READ_KEY, row)
    window = _question_store.load_canonical(ctx, benchmark_id, limit, start)
    return [
        {"position": position, **question.as_dict(with_answer=with_key)}
        for position, question in enumerate(window, start=start)
    ]


def preview_benchmark_change(
    ctx: Context, benchmark_id: str, change: BenchmarkChange | dict[str, Any]
) -> ChangePreview:
    """Validate a change against the benchmark as it is now and return the diff; applies nothing.

    Raises:
        NotFound: not visible to the principal.
        PermissionDenied: the principal may not read it, or may not see the key it would change.
        InvalidInput: bad change; every problem with its place.
        Frozen: the change touches questions that are frozen.
    """
    row = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ)
    # A question diff shows the answer key, so previewing one needs the right to see the key.
    access.require(ctx, Action.BENCHMARK_READ_KEY, row)
    preview, _ = _plan_change(ctx, row, parse(BenchmarkChange, change))
    return preview


def edit_benchmark(
    ctx: Context,
    benchmark_id: str,
    change: BenchmarkChange | dict[str, Any],
    if_match: str | None = None,
) -> tuple[BenchmarkView, ChangePreview]:
    """Apply a change (metadata and/or the full new question list); questions bump the version.
    With `if_match` (an HTTP If-Match value) only while the benchmark is still in the state that
    names (`edit_tags`); without it, whatever was stored meanwhile.

    Raises:
        NotFound: not visible to the principal.
        PermissionDenied: not the owner or a collaborator, or the token lacks the edit scope.
        InvalidInput: bad change; every problem with its place.
        Frozen: questions of a qa/mcq benchmark cannot change after its first run.
        Conflict: the change changes nothing, or would leave a published benchmark with no
            questions.
        Stale: `if_match` names a state the benchmark has left.
    """
    # Held: a run accepted meanwhile froze the questions, and this edit must see that; an
    # edit committed meanwhile is seen by the tag check, which a read before the lock missed.
    row = access.require_held(ctx, benchmark_id, Action.BENCHMARK_EDIT, exclusive=True)
    if if_match is not None:
        edit_tags.require_current(row, if_match)
    preview, new_questions = _plan_change(ctx, row, parse(BenchmarkChange, change))
    if not preview.metadata and preview.questions is None:
        raise Conflict("The change changes nothing.", {"id": benchmark_id})
    for name, values in preview.metadata.items():
        setattr(row, name, values["after"])
    if new_questions is not None:
        _question_store.replace_questions(ctx, row.id, new_questions)
        row.version = preview.version_after
    row.updated_at = ctx.now()
    audit.record(
        ctx,
        audit.AuditAction.BENCHMARK_EDIT,
        "benchmark",
        row.id,
        fields=sorted(preview.metadata),
        questions_changed=new_questions is not None,
        version=row.version,
    )
    return _view(ctx, row), preview


def _plan_change(
    ctx: Context, row: Benchmark, change: BenchmarkChange
) -> tuple[ChangePreview, list[questions.Canonical] | None]:
    metadata: dict[str, dict[str, str]] = {}
    for name in ("title", "description"):
        after = getattr(change, name)
        if after is not None and after != getattr(row, name):
            metadata[name] = {"before": getattr(row, name), "after": after}
    problems = title_problems(metadata["title"]["after"]) if "title" in metadata else []
    diff, new_list, warnings = None, None, []
    if change.questions is not None:
        checked = _with_questions(problems, row.format, change.questions)
        if not checked.questions and row.visibility == "published":
            # Publishing refuses an empty benchmark; emptying one afterwards left everyone a
            # benchmark of nothing to run.
            raise Conflict(
                "A published benchmark keeps at least one question: unpublish it first.",
                {"id": row.id},
            )
        current = _question_store.load_canonical(ctx, row.id)
        if checked.questions != current:
            if is_frozen(row):
                assert row.questions_frozen_at is not None  # is_frozen read it
                raise Frozen(
                    "The questions and answer key are frozen: this benchmark already has a run, "
                    "and results must stay comparable. Title and description can still change; "
                    "create a new benchmark for new questions.",
                    {"id": row.id, "frozen_at": iso_utc(row.questions_frozen_at)},
                )
            diff, new_list, warnings = (
                questions.diff_questions(current, checked.questions),
                checked.questions,
                checked.warnings,
            )
    elif problems:
        raise invalid_all(problems)
    after = row.version + 1 if new_list is not None else row.version
    return ChangePreview(row.id, metadata, diff, row.version, after, warnings), new_list


def publish_benchmark(ctx: Context, benchmark_id: str) -> BenchmarkView:
    """Make a benchmark visible to everyone (questions yes, answer keys never). Idempotent.

    Raises:
        NotFound: not visible to the principal.
        PermissionDenied: not the owner or a collaborator, or the token lacks the publish scope.
        Conflict: a benchmark with no questions cannot be published, nor a custom one while
            a solution of its bundle fails.
    """
    row = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_PUBLISH)
    if row.visibility == "published":
        return _view(ctx, row)
    if row.format in FROZEN_FORMATS and _question_count(ctx, row.id) == 0:
        raise Conflict("A benchmark with no questions cannot be published.", {"id": row.id})
    if row.format == "custom":
        # Imported here: the bundle engine (Markdown, YAML) is for custom benchmarks only, and
        # every run launch imports this module.
        from benchgen.services.benchmarks import _bundle_versions

        _bundle_versions.require_solutions_pass(ctx, row.id)
    row.visibility, row.published_at, row.updated_at = "published", ctx.now(), ctx.now()
    audit.record(ctx, audit.AuditAction.BENCHMARK_PUBLISH, "benchmark", row.id)
    return _view(ctx, row)


def unpublish_benchmark(ctx: Context, benchmark_id: str) -> BenchmarkView:
    """Make a published benchmark private again (owner, web app or CLI only). Idempotent.

    Raises:
        NotFound: not visible to the principal.
        PermissionDenied: not the owner, or a token or the agent asked.
    """
    row = access.require_held(ctx, benchmark_id, Action.BENCHMARK_UNPUBLISH, exclusive=True)
    if row.visibility != "private":
        row.visibility, row.published_at, row.updated_at = "private", None, ctx.now()
        audit.record(ctx, audit.AuditAction.BENCHMARK_UNPUBLISH, "benchmark", row.id)
    return _view(ctx, row)


def delete_benchmark(ctx: Context, benchmark_id: str) -> None:
    """Soft-delete: the benchmark disappears for everyone and its unfinished runs stop; rows
    stay for the audit trail.

    Raises:
        NotFound: not visible to the principal (or already deleted).
        PermissionDenied: not the owner, or a token or the agent asked.
    """
    row = access.require_held(ctx, benchmark_id, Action.BENCHMARK_DELETE, exclusive=True)
    row.deleted_at = row.updated_at = ctx.now()
    # Its runs stop as if cancelled: a queued one ends unstarted (nothing charged), a running
    # one settles what it used. Left going, they charged launchers who could no longer see them.
    ctx.session.execute(
        update(Run)
        .where(Run.benchmark_id == row.id, Run.status.in_(RUN_ACTIVE))
        .values(cancel_requested=True)
    )
    audit.record(ctx, audit.AuditAction.BENCHMARK_DELETE, "benchmark", row.id)


def freeze_questions(ctx: Context, benchmark_id: str) -> bool:
    """Freeze a qa/mcq benchmark's questions because a run on it is being accepted.

    Called by the run service inside the unit of work that enqueues the run, whoever launched
    it. Returns True when this call froze it. Custom formats never freeze.

    Raises:
        NotFound: not visible to the principal.
        PermissionDenied: the principal may not run on this benchmark.
    """
    row = access.require_benchmark(ctx, benchmark_id, Action.RUN_LAUNCH)
    if row.format not in FROZEN_FORMATS or row.questions_frozen_at is not None:
        return False
    row.questions_frozen_at = ctx.now()
    audit.record(ctx, audit.AuditAction.BENCHMARK_FREEZE, "benchmark", row.id, version=row.version)
    return True


def is_frozen(row: Benchmark) -> bool:
    """True when the questions of `row` can no longer change."""
    return row.format in FROZEN_FORMATS and row.questions_frozen_at is not None


def check_new(spec: BenchmarkIn) -> questions.Validated:
    """A new benchmark's questions, checked with its title: every problem of both at once.

    Raises:
        InvalidInput: each problem of the title and of every question, with its place.
    """
    return _with_questions(title_problems(spec.title), spec.format, spec.questions)


def title_problems(title: str) -> list[dict[str, Any]]:
    """What is wrong with a benchmark's title (the one rule every door's title meets), as
    problems to report together with the questions': none when it can be used."""
    problem = name_problem(title)
    return [] if problem is None else [{"loc": ["title"], "msg": problem}]


def _with_questions(
    problems: list[dict[str, Any]], fmt: str, items: list[QuestionIn]
) -> questions.Validated:
    """The questions checked, refused with `problems` found before: one reply lists all."""
    try:
        checked = questions.validate_questions(fmt, items)
    except InvalidInput as exc:
        raise invalid_all([*problems, *exc.errors]) from None
    if problems:
        raise invalid_all(problems)
    return checked


def _question_count(ctx: Context, benchmark_id: str) -> int:
    count = ctx.session.scalar(_counted(), {"benchmark_id": benchmark_id})
    return int(count or 0)


@cache
def _counted() -> Select[int]:
    """The questions of benchmark `benchmark_id`, counted. Built once and reused with new values:
    every view of one benchmark runs it, and building it cost more than running it."""
    return (
        select(func.count())
        .select_from(Question)
        .where(Question.benchmark_id == bindparam("benchmark_id"))
    )


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _view(
    ctx: Context, row: Benchmark, roles: frozenset[Role] | None = None, count: int | None = None
) -> BenchmarkView:
    user = access.live_user(ctx)
    if roles is None:
        roles = access.roles_on(ctx, user, row) if user else frozenset[Role]()
    return BenchmarkView(
        id=row.id,
        title=row.title,
        description=row.description,
        format=row.format,
        visibility=row.visibility,
        owner_id=row.owner_id,
        version=row.version,
        question_count=_question_count(ctx, row.id) if count is None else count,
        questions_frozen=is_frozen(row),
        created_door=row.created_door,
        created_at=row.created_at,
        updated_at=row.updated_at,
        published_at=row.published_at,
        roles=sorted(roles),
        can_see_key=access.can(ctx, Action.BENCHMARK_READ_KEY, row, roles=roles) if user else False,
    )
