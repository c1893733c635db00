"""Per-question results of a run, and their export as JSONL or CSV — cut to what the viewer may
see: the team sees correctness and expected answers; anyone else sees their model's answers."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.core.permissions import Action
from benchgen.db.tables import Benchmark, Run, RunResult
from benchgen.services import access
from benchgen.services.benchmarks import _question_store
from benchgen.services.runs import _verdicts, exports
from benchgen.services.specs import MAX_RESULTS, check_window

PUBLIC_FIELDS = (
    "position",
    "prompt",
    "prompt_sent",
    "raw",
    "error",
    "latency_ms",
    "input_tokens",
    "output_tokens",
)
DETAIL_FIELDS = (
    *PUBLIC_FIELDS,
    "expected",
    "extracted",
    "outcome",
    "correct",
    "score",
    "reasoning",
)
# A question's other samples, in CSV as columns `sample_<n>_<field>` (first sample's: above).
SAMPLE_PUBLIC_FIELDS = ("raw", "error")
SAMPLE_DETAIL_FIELDS = (*SAMPLE_PUBLIC_FIELDS, "extracted", "outcome", "correct", "score")
FORMATS = ("jsonl", "csv")
EXPORT_CHUNK = 1000  # results a download reads at a time
# The columns a result shows: rows of plain values cost a fraction of loading ORM objects (and
# the log-probabilities, never shown here, are not even decoded).
_COLUMNS = (
    RunResult.position,
    RunResult.prompt_sent,
    RunResult.raw,
    RunResult.error,
    RunResult.latency_ms,
    RunResult.input_tokens,
    RunResult.output_tokens,
    RunResult.extracted,
    RunResult.outcome,
    RunResult.score,
    RunResult.reasoning,
)


def list_results(
    ctx: Context, run_id: str, limit: int = 100, offset: int = 0, after: int | None = None
) -> list[dict[str, Any]]:
    """One page of per-question results, in question order: after position `after` when given,
    then after `offset` more.

    Raises:
        NotFound: the run is not visible to the principal.
        InvalidInput: limit outside 1..MAX_RESULTS or negative offset.
    """
    check_window(limit, offset, MAX_RESULTS)
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    return list(_rows(ctx, run, limit, offset, after))


def export_results(ctx: Context, run_id: str, fmt: str) -> tuple[str, str]:
    """All results as (media type, text) in `fmt` ('jsonl' or 'csv'). A run with several
    samples per question gives each question's other samples too: in JSONL a list
    (`samples`), in CSV columns after the first sample's, `sample_1_raw`, `sample_1_error`, …
    for every sample the run asked (one row per question still, so rows count questions).

    Raises:
        NotFound: the run is not visible to the principal.
        InvalidInput: unknown format.
    """
    if fmt not in FORMATS:
        raise invalid(["format"], f"choose one of {', '.join(FORMATS)}")
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    rows = _every_row(ctx, run)
    buffer = io.StringIO()
    if fmt == "jsonl":
        for row in rows:
            buffer.write(json.dumps(row) + "\n")
        return "application/x-ndjson", buffer.getvalue()
    detail = _detail(ctx, run)
    fields = list(DETAIL_FIELDS if detail else PUBLIC_FIELDS)
    extra = range(1, int((run.settings or {}).get("samples", 1)))
    sample_fields = SAMPLE_DETAIL_FIELDS if detail else SAMPLE_PUBLIC_FIELDS
    fields += [f"sample_{n}_{name}" for n in extra for name in sample_fields]
    writer = csv.DictWriter(
        buffer, fieldnames=fields, extrasaction="ignore", quoting=exports.QUOTING
    )
    writer.writeheader()
    for row in rows:
        writer.writerow({name: _cell(value) for name, value in _flat(row).items()})
    return "text/csv", buffer.getvalue()


def _every_row(ctx: Context, run: Run) -> Iterator[dict[str, Any]]:
    """Every result, read a chunk at a time: only the text written out grows with the run,
    not its rows, samples and questions besides (a 10,000-question run asking 10 samples
    took 2.6 times its 50 MB of JSONL in memory read whole, 2 times by chunks)."""
    after = None
    while True:
        chunk = list(_rows(ctx, run, EXPORT_CHUNK, 0, after))
        yield from chunk
        if len(chunk) < EXPORT_CHUNK:
            return
        after = chunk[-1]["position"]


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """A result as one CSV row: each of its other samples' fields as columns of their own."""
    flat = {name: value for name, value in row.items() if name != "samples"}
    for sample in row.get("samples", ()):
        flat.update({f"sample_{sample['sample']}_{k}": v for k, v in sample.items()})
    return flat


def _rows(
    ctx: Context, run: Run, limit: int | None, offset: int, after: int | None
) -> Iterator[dict[str, Any]]:
    detail = _detail(ctx, run)
    query = (
        select(*_COLUMNS)
        .where(RunResult.run_id == run.id)
        .order_by(RunResult.position)
        .offset(offset)
    )
    # A running run stores results as answers come back, not in question order: `after` is a
    # position, so a result stored meanwhile at an earlier place cannot shift the page.
    if after is not None:
        query = query.where(RunResult.position > after)
    if limit is not None:
        query = query.limit(limit)
    found = list(ctx.session.execute(query))
    if not found:
        return
    samples = _verdicts.extra_samples(ctx.session, run, [r.position for r in found], detail)
    # Only the questions the page shows (a page of a 10,000-question run needs 100 of them;
    # a random subset's page, spread over the whole benchmark, no more).
    stored = _question_store.load_at(ctx, run.benchmark_id, [r.position for r in found])
    for result in found:
        question = stored.get(result.position)
        row: dict[str, Any] = {
            "position": result.position,
            "prompt": question.prompt if question else None,
            "prompt_sent": result.prompt_sent,
            "raw": result.raw,
            "error": result.error,
            "latency_ms": result.latency_ms,
            "input_tokens": result.input_tokens,
            "output_tokens": result.output_tokens,
        }
        if detail:
            row.update(
                expected=question.answer if question else None,
                extracted=result.extracted,
                outcome=result.outcome,
                correct=result.outcome == "correct",
                score=result.score,
                reasoning=result.reasoning,
            )
        if result.position in samples:
            row["samples"] = samples[result.position]
        yield row


def _detail(ctx: Context, run: Run) -> bool:
    benchmark = ctx.session.get(Benchmark, run.benchmark_id)
    return benchmark is not None and access.can(ctx, Action.RUN_READ_DETAIL, benchmark, run)


def _cell(value: Any) -> Any:
    # Answers come from models and questions from authors: neither may become a formula.
    return exports.spreadsheet_safe(value)
