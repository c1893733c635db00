"""`/api/v1/runs`: estimate, start, read, results, log, export, cancel, retry, rescore, rejudge."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response

from benchgen.api.deps import ContextDep, RuntimeDep
from benchgen.api.errors import COMMON, responses
from benchgen.api.files import streamed_attachment
from benchgen.api.paging import Cursor, Keyset, by_position, newest, page
from benchgen.api.routing import OneThreadRoute
from benchgen.api.schemas import LogLine, Page, RescoreIn, StartRun
from benchgen.api.scoring import at_its_field
from benchgen.core.errors import InvalidInput
from benchgen.services.keysets import Newest
from benchgen.services.runs import launch, rejudging, rescoring, results, retries, run_log
from benchgen.services.runs.launch import Estimate, RunView
from benchgen.services.runs.rejudging import Rejudging
from benchgen.services.runs.rescoring import Rescore

router = APIRouter(
    prefix="/api/v1/runs", tags=["runs"], responses=COMMON, route_class=OneThreadRoute
)
RUNS: Keyset[RunView, Newest] = newest("runs", lambda row: (row.created_at, row.id))
RESULTS = by_position("results")
MAX_LOG_ID = 2**31 - 1  # log line ids are 32-bit integers: a larger `after` fails the query


@router.get(
    "", response_model=Page[RunView], responses=responses(404), openapi_extra={"x-scope": "read"}
)
def list_runs(
    ctx: ContextDep,
    benchmark_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Runs you launched, and every run on benchmarks you own or collaborate on; a
    `benchmark_id` you cannot see is 404."""
    return page(
        RUNS, lambda n, after: launch.list_runs(ctx, benchmark_id, n, after=after), cursor, limit
    )


@router.get(
    "/estimate",
    response_model=Estimate,
    responses=responses(409),
    openapi_extra={"x-scope": "read"},
)
def estimate_run(
    ctx: ContextDep, benchmark_id: str, model_id: str, phase_id: str | None = None
) -> Estimate:
    """The most a run would cost, in credits (reserved when it starts); an unknown phase is
    404 and a closed one 409, as when starting it."""
    return launch.preview_run(ctx, benchmark_id, model_id, phase_id)


@router.post(
    "/estimate",
    response_model=Estimate,
    responses=responses(409),
    openapi_extra={"x-scope": "read"},
)
def estimate_run_with(ctx: ContextDep, body: StartRun) -> Estimate:
    """The most a run with these settings, samples and subset would cost, refused as starting
    it would be: unsupported settings (422), an unknown phase (404), a closed phase or an
    estimate above `max_credits` (409)."""
    return launch.preview_run(ctx, body.benchmark_id, body.model_id, body.phase_id, body.options())


@router.post(
    "",
    status_code=202,
    response_model=RunView,
    responses=responses(402, 409, 429),
    openapi_extra={"x-scope": "runs"},
)
def start_run(ctx: ContextDep, body: StartRun) -> RunView:
    """Queue a run: reserves the estimate (402 if the balance cannot cover it, 409 if it
    exceeds `max_credits`) and freezes the benchmark's questions. People outside the
    benchmark's team get a few runs on it a day (429 beyond them)."""
    return launch.start_run(ctx, body.benchmark_id, body.model_id, body.phase_id, body.options())


@router.get("/{run_id}", response_model=RunView, openapi_extra={"x-scope": "read"})
def get_run(ctx: ContextDep, run_id: str) -> RunView:
    """Status, progress, cost and aggregate scores."""
    return launch.get_run(ctx, run_id)


@router.get(
    "/{run_id}/results", response_model=Page[dict[str, Any]], openapi_extra={"x-scope": "read"}
)
def list_results(
    ctx: ContextDep,
    run_id: str,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Cursor = None,
) -> dict[str, Any]:
    """Per-question results; correctness and expected answers only for the benchmark's team."""
    return page(
        RESULTS,
        lambda n, after: results.list_results(ctx, run_id, n, after=after),
        cursor,
        limit,
        run_id,
    )


@router.get("/{run_id}/log", response_model=Page[LogLine], openapi_extra={"x-scope": "read"})
def read_log(
    ctx: ContextDep,
    run_id: str,
    after: Annotated[int, Query(ge=0, le=MAX_LOG_ID)] = 0,
    limit: Annotated[int, Query(ge=1, le=5000)] = 1000,
) -> dict[str, Any]:
    """Log lines after the id `after`; poll with the last id to follow a live run."""
    lines = run_log.read_log(ctx, run_id, after, limit)
    return {"items": lines, "next_cursor": str(lines[-1].id) if len(lines) == limit else None}


@router.get(
    "/{run_id}/export",
    openapi_extra={"x-scope": "read"},
    responses={200: {"content": {"application/x-ndjson": {}, "text/csv": {}}}},
)
def export_results(
    ctx: ContextDep,
    runtime: RuntimeDep,
    run_id: str,
    format: Annotated[Literal["jsonl", "csv"], Query()] = "jsonl",
) -> Response:
    """Download predictions and the per-question breakdown as JSONL or CSV."""
    media = results.export_media(ctx, run_id, format)  # refused here, before the first byte
    chunks = results.export_stream(runtime, ctx.principal, run_id, format)
    return streamed_attachment(chunks, f"{run_id}.{format}", media)


@router.post(
    "/{run_id}/cancel",
    response_model=RunView,
    responses=responses(409),
    openapi_extra={"x-scope": "runs"},
)
def cancel_run(ctx: ContextDep, run_id: str) -> RunView:
    """Cancel a queued run (refunded) or stop a running one (settles what it used)."""
    return launch.cancel_run(ctx, run_id)


@router.post(
    "/{run_id}/retry",
    status_code=202,
    response_model=RunView,
    responses=responses(402, 409, 429),
    openapi_extra={"x-scope": "runs"},
)
def retry_run(ctx: ContextDep, run_id: str) -> RunView:
    """Ask a finished run's errored questions again as a new run linked to it (`retry_of`);
    the original is never changed. Launched like any run: quota, credits reserved."""
    return retries.retry_errored(ctx, run_id)


@router.post(
    "/{run_id}/rescore",
    response_model=Rescore,
    responses=responses(409),
    openapi_extra={"x-scope": "runs"},
)
def rescore_run(
    ctx: ContextDep,
    run_id: str,
    apply: bool = False,
    body: RescoreIn | None = None,
) -> Rescore:
    """Re-apply scoring to saved answers without calling any model; a dry run unless
    `apply=true`. Other `scoring` settings: the benchmark's owner and collaborators only. 409
    when the run has not finished or stopped before any answer came back."""
    scoring = body.scoring.settings() if body and body.scoring else None
    try:
        return rescoring.rescore_run(ctx, run_id, scoring, apply)
    except InvalidInput as problem:
        raise at_its_field(problem, "body", "scoring") from None


@router.post(
    "/{run_id}/rejudge",
    status_code=202,
    response_model=Rejudging,
    responses=responses(409),
    openapi_extra={"x-scope": "runs"},
)
def rejudge_run(ctx: ContextDep, run_id: str) -> Rejudging:
    """Have the benchmark's AI judge judge again, in the background, the answers of a completed
    run whose judging failed; the model is not asked again and the run costs nothing more. Its
    scores change once the judge has answered (a hand-corrected score stays). 409 when the run
    has not completed, has no failed judging or is being judged again, or the benchmark has no
    judge; 403 when the judge is not open to you."""
    return rejudging.rejudge_run(ctx, run_id)
