"""Per-question results of a run, and their export as JSONL or CSV — cut to what the viewer may
see: the team sees correctness and expected answers; anyone else sees their model's answers."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Generator, Iterator
from typing import Any

from sqlalchemy import Row, Select, select
from sqlalchemy.orm import Session

from benchgen.core.context import Context, Principal
from benchgen.core.errors import invalid
from benchgen.core.permissions import Action
from benchgen.db.tables import Benchmark, Run, RunResult
from benchgen.services import access
from benchgen.services.benchmarks import _question_store
from benchgen.services.runs import _verdicts, exports
from benchgen.services.runtime import Runtime, transaction
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
MEDIA = {"jsonl": "application/x-ndjson", "csv": "text/csv"}
EXPORT_CHUNK = 1000  # results a download reads at a time at most
# Characters of text a download reads at a time at most: 1000 replies of max_reply_chars (64k
# characters) each, ten samples of each, were 640 M characters, held several times over (rows,
# text, bytes). A chunk of long replies holds fewer results instead (one at least): a download
# of 10,000 replies of 10k characters peaked at 14 MB this way, 548 MB built whole.
EXPORT_CHARS = 2**20
_CURSOR_ROWS = 20  # rows taken from the database cursor at a time while a chunk is read
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
    query = _query(run).offset(offset).limit(limit)
    # A running run stores results as answers come back, not in question order: `after` is a
    # position, so a result stored meanwhile at an earlier place cannot shift the page.
    if after is not None:
        query = query.where(RunResult.position > after)
    found = list(ctx.session.execute(query))
    return list(_shown(ctx, run, found, _detail(ctx, run)))


def export_media(ctx: Context, run_id: str, fmt: str) -> str:
    """The media type of the run's results in `fmt`, once the viewer may download them: a door
    asks before it sends the first byte, so that a refusal is a clean error, not a cut file.

    Raises:
        NotFound: the run is not visible to the principal.
        InvalidInput: unknown format.
    """
    media = _media(fmt)
    access.require_run(ctx, run_id, Action.RUN_READ)
    return media


def export_stream(
    runtime: Runtime, principal: Principal, run_id: str, fmt: str
) -> Generator[str, None, None]:
    """`export_chunks` in a read unit of work of its own, open as long as the download: a door's
    own unit of work ends as its route returns, before the first piece is sent. Close it when
    the response ends, so that a client gone mid-download gives its connection back at once."""
    with transaction(runtime, principal, write=False) as ctx:
        yield from export_chunks(ctx, run_id, fmt)


def export_chunks(ctx: Context, run_id: str, fmt: str) -> Iterator[str]:
    """All results in `fmt` ('jsonl' or 'csv'), a piece of text at a time: EXPORT_CHUNK results
    read at once, fewer long ones, so that a download's memory does not grow with the run. A
    run with several samples per question gives each question's other samples too: in JSONL a
    list (`samples`), in CSV columns after the first sample's, `sample_1_raw`, `sample_1_error`,
    … for every sample the run asked (one row per question still, so rows count questions).

    `ctx` stays open until the last piece. A unit of work that has read nothing yet reads every
    piece from one snapshot: a download of a running or rescored run is one state of it.

    Raises (as the first piece is asked for):
        NotFound: the run is not visible to the principal.
        InvalidInput: unknown format.
    """
    _media(fmt)
    _one_snapshot(ctx.session)
    run = access.require_run(ctx, run_id, Action.RUN_READ)
    detail = _detail(ctx, run)
    chunks = _every_chunk(ctx, run, detail)
    if fmt == "jsonl":
        for rows in chunks:
            yield "".join(json.dumps(row) + "\n" for row in rows)
        return
    fields = list(DETAIL_FIELDS if detail else PUBLIC_FIELDS)
    extra = range(1, _samples(run))
    sample_fields = SAMPLE_DETAIL_FIELDS if detail else SAMPLE_PUBLIC_FIELDS
    fields += [f"sample_{n}_{name}" for n in extra for name in sample_fields]
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=fields, extrasaction="ignore", quoting=exports.QUOTING
    )
    writer.writeheader()
    for rows in chunks:
        for row in rows:
            writer.writerow({name: _cell(value) for name, value in _flat(row).items()})
        yield _taken(buffer)
    if buffer.tell():  # the header of a run without results
        yield _taken(buffer)


def _media(fmt: str) -> str:
    if fmt not in MEDIA:
        raise invalid(["format"], f"choose one of {', '.join(FORMATS)}")
    return MEDIA[fmt]


def _one_snapshot(session: Session) -> None:
    """Have a unit of work that has read nothing yet read one snapshot: on PostgreSQL each
    statement of a READ COMMITTED transaction sees what was committed before it, so a chunk
    could show a rescoring or new answers the chunk before did not (REPEATABLE READ sees the
    database as the first statement found it). A SQLite read transaction already does."""
    if session.in_transaction() or session.get_bind().dialect.name != "postgresql":
        return
    session.connection(execution_options={"isolation_level": "REPEATABLE READ"})


def _taken(buffer: io.StringIO) -> str:
    """What `buffer` holds, emptied for the next chunk."""
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text


def _every_chunk(ctx: Context, run: Run, detail: bool) -> Iterator[list[dict[str, Any]]]:
    """Every result, a chunk at a time, after the position the chunk before ended at."""
    after = -1
    while found := _chunk(ctx, run, after):
        yield list(_shown(ctx, run, found, detail))
        after = found[-1].position


def _chunk(ctx: Context, run: Run, after: int) -> list[Row[Any]]:
    """The results after position `after`: EXPORT_CHUNK of them, fewer where their text (and
    their other samples', taken as long) outgrows EXPORT_CHARS; one at least. Taken from the
    cursor a few rows at a time: the driver does not hold the rest of EXPORT_CHUNK meanwhile."""
    query = _query(run).where(RunResult.position > after).limit(EXPORT_CHUNK)
    samples = _samples(run)
    found: list[Row[Any]] = []
    chars = 0
    result = ctx.session.execute(query.execution_options(yield_per=_CURSOR_ROWS))
    try:
        for row in result:
            found.append(row)
            chars += samples * _chars(row)
            if chars >= EXPORT_CHARS:
                break
    finally:
        result.close()
    return found


def _chars(result: Row[Any]) -> int:
    """Characters of a result's texts that may be long (a question's prompt is short beside)."""
    texts = (result.prompt_sent, result.raw, result.error, result.reasoning)
    return sum(len(text) for text in texts if text)


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """A result as one CSV row: each of its other samples' fields as columns of their own."""
    flat = {name: value for name, value in row.items() if name != "samples"}
    for sample in row.get("samples", ()):
        flat.update({f"sample_{sample['sample']}_{k}": v for k, v in sample.items()})
    return flat


def _query(run: Run) -> Select[*tuple[Any, ...]]:
    return select(*_COLUMNS).where(RunResult.run_id == run.id).order_by(RunResult.position)


def _shown(ctx: Context, run: Run, found: list[Row[Any]], detail: bool) -> Iterator[dict[str, Any]]:
    """The results `found` (in question order) as the viewer sees them."""
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


def _samples(run: Run) -> int:
    return int((run.settings or {}).get("samples", 1))


def _cell(value: Any) -> Any:
    # Answers come from models and questions from authors: neither may become a formula.
    return exports.spreadsheet_safe(value)
