"""`/api/v1/benchmarks`: list, read, questions, leaderboard, create, import, change, publish."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response

from benchgen.api.deps import ContextDep
from benchgen.api.errors import COMMON, ErrorEnvelope, placed, responses
from benchgen.api.paging import Cursor, Keyset, by_position, newest, page, standings
from benchgen.api.routing import OneThreadRoute
from benchgen.api.schemas import (
    CreatedBenchmark,
    EditedBenchmark,
    LeaderboardPage,
    Page,
    Question,
)
from benchgen.core.context import Context
from benchgen.services.accounts import ratelimits
from benchgen.services.benchmarks import edit_tags, imports, lifecycle
from benchgen.services.benchmarks.imports import ImportIn
from benchgen.services.benchmarks.lifecycle import BenchmarkView, ChangePreview, Created
from benchgen.services.keysets import Newest
from benchgen.services.runs import leaderboards
from benchgen.services.runs.leaderboards import Leaderboard, Row
from benchgen.services.runs.standings import Standing
from benchgen.services.specs import BenchmarkChange, BenchmarkIn

router = APIRouter(
    prefix="/api/v1/benchmarks", tags=["benchmarks"], responses=COMMON, route_class=OneThreadRoute
)
_QUOTA_HEADERS = {
    f"X-RateLimit-{name}": {"description": text, "schema": {"type": "integer"}, "required": True}
    for name, text in (
        ("Limit", "Creations allowed in the tighter window (per minute or per day)"),
        ("Remaining", "Creations left in that window"),
        ("Reset", "When the window's oldest creation leaves it (Unix time, seconds)"),
    )
}
CREATION = {201: {"headers": _QUOTA_HEADERS}, **responses(429)}
# Imports carry whole files, so the body limit allows them more (BENCHGEN_MAX_IMPORT_BYTES).
IMPORT_PATH = f"{router.prefix}/import"
Limit = Annotated[int, Query(ge=1, le=200)]
BENCHMARKS: Keyset[BenchmarkView, Newest] = newest(
    "benchmarks", lambda row: (row.created_at, row.id)
)
QUESTIONS = by_position("questions")
STANDINGS = standings("leaderboard")
# The state a read saw, sent back with a change so it cannot overwrite what others saved since.
_ETAG: dict[str, Any] = {
    "ETag": {
        "description": "The benchmark's title, description and questions version as read: send "
        "it back in If-Match with a change",
        "schema": {"type": "string"},
        "required": True,
    }
}
TAGGED: dict[int | str, dict[str, Any]] = {200: {"headers": _ETAG}}
IfMatch = Annotated[
    str | None,
    Header(
        max_length=1000,
        description="The ETag of the read this change was made from; a stale one is a 412",
    ),
]
STALE: dict[int | str, dict[str, Any]] = {
    412: {
        "model": ErrorEnvelope,
        "description": "If-Match names a state the benchmark has left: `details.changed` says "
        "what changed, `details.etag` is the tag now; nothing was saved",
    }
}
# Phase ids are BenchGen's (`ph_` and 20 characters): a longer one names none, and is not echoed.
PhaseId = Annotated[str | None, Query(max_length=64)]
# A leaderboard's cursor carries the last row's score in every column: longer than others.
BoardCursor = Annotated[
    str | None,
    Query(max_length=4000, description="next_cursor of the last page, passed back as it came"),
]


@router.get("", response_model=Page[BenchmarkView], openapi_extra={"x-scope": "read"})
def list_benchmarks(
    ctx: ContextDep,
    mine: bool = False,
    search: Annotated[str, Query(max_length=200)] = "",
    limit: Limit = 50,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Benchmarks you can see: yours, shared with you, and published ones (unless `mine`)."""
    return page(
        BENCHMARKS,
        lambda n, after: lifecycle.list_benchmarks(ctx, mine, search, n, after=after),
        cursor,
        limit,
    )


@router.post(
    "",
    status_code=201,
    response_model=CreatedBenchmark,
    responses=CREATION,
    openapi_extra={"x-scope": "create"},
)
def create_benchmark(
    ctx: ContextDep, body: BenchmarkIn, request: Request, response: Response
) -> dict[str, Any]:
    """Create a qa or mcq benchmark with its questions (at most 10 a day and 3 a minute,
    together with the agent's). Duplicates come back as `warnings`."""
    created = lifecycle.create_benchmark(ctx, body)
    quota_headers(ctx, response)
    return created_reply(request, created)


@router.post(
    "/import",
    status_code=201,
    response_model=CreatedBenchmark,
    responses=CREATION,
    openapi_extra={"x-scope": "create"},
)
def import_benchmark(
    ctx: ContextDep, body: ImportIn, request: Request, response: Response
) -> dict[str, Any]:
    """Create a benchmark from a JSONL or CSV file's text (counts against the creation limit)."""
    created = imports.import_benchmark(ctx, body)
    quota_headers(ctx, response)
    return created_reply(request, created)


def created_reply(request: Request, created: Created) -> dict[str, Any]:
    """A new benchmark and its warnings, each `loc` led by its place as a refusal's are."""
    return {"benchmark": created.benchmark, "warnings": placed(request, created.warnings)}


def quota_headers(ctx: Context, response: Response) -> None:
    """The tighter of the two creation windows, so scripts can pace themselves (every route
    that creates a benchmark sends them)."""
    quota = ratelimits.creation_quota(ctx)
    response.headers["X-RateLimit-Limit"] = str(quota.limit)
    response.headers["X-RateLimit-Remaining"] = str(quota.remaining)
    # Rounded up, as Retry-After is: a client sleeping until a second rounded down came back
    # just before the room did, and got a 429.
    response.headers["X-RateLimit-Reset"] = str(math.ceil(quota.reset_at.timestamp()))


@router.get(
    "/{benchmark_id}",
    response_model=BenchmarkView,
    responses=TAGGED,
    openapi_extra={"x-scope": "read"},
)
def get_benchmark(ctx: ContextDep, benchmark_id: str, response: Response) -> BenchmarkView:
    """One benchmark, its ETag in the header; 404 when it does not exist or you may not see it."""
    view = lifecycle.get_benchmark(ctx, benchmark_id)
    _tag(response, view)
    return view


def _tag(response: Response, view: BenchmarkView) -> None:
    """The benchmark's entity tag, for a change made from this read to send back."""
    response.headers["ETag"] = edit_tags.tag_of(view.version, view.title, view.description)


@router.get(
    "/{benchmark_id}/questions",
    response_model=Page[Question],
    responses=TAGGED,
    openapi_extra={"x-scope": "read"},
)
def list_questions(
    ctx: ContextDep,
    benchmark_id: str,
    response: Response,
    limit: Annotated[int, Query(ge=1, le=10000)] = 1000,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """The questions in order; `answer` only for the owner and collaborators. The ETag is the
    benchmark's: the same on every page when no change came between them."""
    # Read before the questions: a change committed between the two reads then makes the tag
    # older than the list, so a change made from the list is refused, never let through.
    response.headers["ETag"] = edit_tags.current_tag(ctx, benchmark_id)
    return page(
        QUESTIONS,
        lambda n, after: lifecycle.list_questions(ctx, benchmark_id, limit=n, after=after),
        cursor,
        limit,
        benchmark_id,
    )


@router.get(
    "/{benchmark_id}/run-quota",
    response_model=ratelimits.Quota | None,
    openapi_extra={"x-scope": "read"},
)
def get_run_quota(ctx: ContextDep, benchmark_id: str) -> ratelimits.Quota | None:
    """Your runs left today on this benchmark; null for its owner and collaborators, whom the
    strangers' daily quota does not limit."""
    return ratelimits.run_quota(ctx, benchmark_id)


@router.get(
    "/{benchmark_id}/leaderboard",
    response_model=LeaderboardPage,
    openapi_extra={"x-scope": "read"},
)
def get_leaderboard(
    ctx: ContextDep,
    benchmark_id: str,
    phase_id: PhaseId = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    cursor: BoardCursor = None,
) -> dict[str, Any]:
    """The ranked leaderboard of a phase (the first one by default), from the top."""
    boards: list[Leaderboard] = []

    def fetch(n: int, after: Standing | None) -> list[tuple[Row, Standing]]:
        found = leaderboards.leaderboard_page(ctx, benchmark_id, phase_id, n, after)
        boards.append(found.board)
        return list(zip(found.board.rows, found.standings, strict=True))

    # A cursor names a place in one phase's order: another phase's, or one given for the
    # first phase by default, is refused rather than read in an order it was not made for.
    rows = page(STANDINGS, fetch, cursor, limit, f"{benchmark_id}\0{phase_id or ''}")
    ranked = [row for row, _ in rows["items"]]
    return {**vars(boards[0]), "rows": ranked, "next_cursor": rows["next_cursor"]}


@router.patch(
    "/{benchmark_id}",
    response_model=EditedBenchmark,
    responses={**TAGGED, **responses(409), **STALE},
    openapi_extra={"x-scope": "edit"},
)
def edit_benchmark(
    ctx: ContextDep,
    benchmark_id: str,
    body: BenchmarkChange,
    request: Request,
    response: Response,
    if_match: IfMatch = None,
) -> dict[str, Any]:
    """Change title, description and/or the full question list (409 once questions froze).
    Send the ETag of the read the change was made from in `If-Match`: if anyone changed the
    benchmark since, nothing is saved (412). Without `If-Match` the change is made whatever
    changed since."""
    view, change = lifecycle.edit_benchmark(ctx, benchmark_id, body, if_match)
    _tag(response, view)
    return {"benchmark": view, "change": _placed_change(request, change)}


@router.post(
    "/{benchmark_id}/preview-change",
    response_model=ChangePreview,
    responses={**TAGGED, **responses(409)},
    openapi_extra={"x-scope": "read"},
)
def preview_change(
    ctx: ContextDep, benchmark_id: str, body: BenchmarkChange, request: Request, response: Response
) -> ChangePreview:
    """What a change would do, validated against the benchmark now; applies nothing. The ETag
    names the state it was previewed on: a change sent with it applies what was previewed."""
    # Read first, as for the questions: a change between the reads makes the tag stale.
    response.headers["ETag"] = edit_tags.current_tag(ctx, benchmark_id)
    preview = lifecycle.preview_benchmark_change(ctx, benchmark_id, body)
    return _placed_change(request, preview)


def _placed_change(request: Request, change: ChangePreview) -> ChangePreview:
    return replace(change, warnings=placed(request, change.warnings))


@router.post(
    "/{benchmark_id}/publish",
    response_model=BenchmarkView,
    responses=responses(409),
    openapi_extra={"x-scope": "publish"},
)
def publish_benchmark(ctx: ContextDep, benchmark_id: str) -> BenchmarkView:
    """Make the benchmark visible to everyone (questions, never the answer key)."""
    return lifecycle.publish_benchmark(ctx, benchmark_id)
