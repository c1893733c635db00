"""A run's download read a chunk at a time: the same bytes as the file built whole, chunks cut
by the length of their text, and one snapshot of a run that changes while it is read. Before,
the whole file was built as one string (and sent as one body), so a download of a large run
held hundreds of MB in the server, several times over."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from sqlalchemy import update

from benchgen.core.context import Principal
from benchgen.db.tables import RunResult, RunSample
from benchgen.services.runs import exports, results
from benchgen.services.runtime import Runtime, transaction
from tests.services.test_run_samples import Sampled, sampled_run
from tests.support import OPERATOR, World

# Formulas, numbers that are no formulas, quotes, separators, line breaks of every kind,
# non-ASCII and markup: what a model may answer, and what the CSV and JSONL must keep as it is.
HOSTILE = [
    "=cmd|' /C calc'!A0",
    "+1+1",
    "-2",
    "@SUM(A1)",
    "\t=tab",
    "\r=cr",
    'a"b""c, d\r\ne\nf;g',
    "\u2028line\u2029sep\x85",
    "東京 🎉 é",
    "</script><script>alert(1)</script>",
    "",
    "1e3",
]


def _hostile_run(world: World, runtime: Runtime) -> Sampled:
    """sam's run of 12 questions asking 3 samples each, every text of it hostile."""
    made = sampled_run(world, runtime)

    def spoil(ctx: Any) -> None:
        for position, text in enumerate(HOSTILE):
            at = (RunResult.run_id == made.run) & (RunResult.position == position)
            spoiled = {"raw": text, "reasoning": text[::-1], "extracted": text[:3]}
            ctx.session.execute(update(RunResult).where(at).values(**spoiled))
            sample = (RunSample.run_id == made.run) & (RunSample.position == position)
            samples = {"raw": f"{text}|s", "error": text[:2] or None}
            ctx.session.execute(update(RunSample).where(sample).values(**samples))

    world.ctx_call(OPERATOR, spoil)
    return made


def _streamed(runtime: Runtime, principal: Principal, run_id: str, fmt: str) -> list[str]:
    """The download's pieces, read as a door reads them: in a read transaction of its own."""
    with transaction(runtime, principal, write=False) as ctx:
        return list(results.export_chunks(ctx, run_id, fmt))


def _built_whole(world: World, principal: Principal, run_id: str, fmt: str) -> str:
    """The file as the export wrote it before it streamed: every row at once, then the text."""
    rows = world.do(principal, results.list_results, run_id)
    if fmt == "jsonl":
        return "".join(json.dumps(row) + "\n" for row in rows)
    team = "expected" in rows[0]
    fields = list(results.DETAIL_FIELDS if team else results.PUBLIC_FIELDS)
    named = results.SAMPLE_DETAIL_FIELDS if team else results.SAMPLE_PUBLIC_FIELDS
    fields += [f"sample_{n}_{name}" for n in (1, 2) for name in named]
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=fields, extrasaction="ignore", quoting=exports.QUOTING
    )
    writer.writeheader()
    for row in rows:
        flat = {name: value for name, value in row.items() if name != "samples"}
        for sample in row["samples"]:
            flat.update({f"sample_{sample['sample']}_{k}": v for k, v in sample.items()})
        writer.writerow({name: exports.spreadsheet_safe(v) for name, v in flat.items()})
    return buffer.getvalue()


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("viewer", ["ana", "sam"])  # the benchmark's owner; the runner
def test_the_pieces_are_byte_for_byte_the_file_built_whole(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch, fmt: str, viewer: str
) -> None:
    made = _hostile_run(world, runtime)
    principal = Principal.web(made.ana if viewer == "ana" else made.sam)
    monkeypatch.setattr(results, "EXPORT_CHUNK", 5)  # cut by count, and by text below
    monkeypatch.setattr(results, "EXPORT_CHARS", 300)
    pieces = _streamed(runtime, principal, made.run, fmt)
    assert len(pieces) > 3
    whole = _built_whole(world, principal, made.run, fmt)
    assert "".join(pieces).encode() == whole.encode()
    assert ("'=cmd|" in whole) == (fmt == "csv")  # a formula is text in a spreadsheet


def test_a_chunk_of_long_replies_holds_fewer_results(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = sampled_run(world, runtime)
    world.ctx_call(
        OPERATOR,
        lambda ctx: ctx.session.execute(
            update(RunResult).where(RunResult.run_id == made.run).values(raw="y" * 2000)
        ),
    )
    # Three samples of 2000 characters and more each: two results pass 10,000 characters.
    monkeypatch.setattr(results, "EXPORT_CHARS", 10_000)
    pieces = _streamed(runtime, Principal.web(made.ana), made.run, "jsonl")
    lines = [piece.count("\n") for piece in pieces]
    assert sum(lines) == 12 and max(lines) == 2


def test_a_run_without_results_downloads_as_the_header_alone(
    world: World, runtime: Runtime
) -> None:
    made = sampled_run(world, runtime)
    world.ctx_call(
        OPERATOR,
        lambda ctx: ctx.session.query(RunResult).filter_by(run_id=made.run).delete(),
    )
    owner = Principal.web(made.ana)
    assert _streamed(runtime, owner, made.run, "jsonl") == []
    (header,) = _streamed(runtime, owner, made.run, "csv")
    assert header.startswith('"position","prompt"') and header.endswith("\r\n")
    assert header.count("\r\n") == 1


@pytest.mark.both_backends
def test_a_download_reads_one_snapshot_while_the_run_changes(
    world: World, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = sampled_run(world, runtime)
    monkeypatch.setattr(results, "EXPORT_CHUNK", 5)
    with transaction(runtime, Principal.web(made.ana), write=False) as ctx:
        pieces = results.export_chunks(ctx, made.run, "jsonl")
        first = next(pieces)
        # Rescored or answered meanwhile (committed): the rest of the file is still the run as
        # its first piece saw it, not half one state and half another.
        world.ctx_call(
            OPERATOR,
            lambda other: other.session.execute(
                update(RunResult)
                .where(RunResult.run_id == made.run, RunResult.position == 11)
                .values(raw="changed meanwhile", outcome="correct")
            ),
        )
        rest = "".join(pieces)
    rows = [json.loads(line) for line in (first + rest).splitlines()]
    assert len(rows) == 12
    assert rows[11]["raw"] != "changed meanwhile"
