"""A benchmark's stored questions, read and replaced without permission checks: for the services
that have already required reading or editing the benchmark (lifecycle, runs, results)."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from typing import Any

from sqlalchemy import Select, Text, cast, delete, insert, select

from benchgen.core.context import Context
from benchgen.core.ids import new_id
from benchgen.db.tables import Question
from benchgen.evals.types import Key
from benchgen.services.benchmarks.questions import Canonical

# Position, prompt, then the answers, choices, tags and metadata as their JSON text.
_Rows = Select[int, str, str, str, str, str]


def load_canonical(
    ctx: Context, benchmark_id: str, limit: int | None = None, offset: int = 0
) -> list[Canonical]:
    """The stored questions of a benchmark, in order, in canonical form (one query; a window of
    them when `limit` is given, cut by the database)."""
    query = _canonical_rows(benchmark_id).order_by(Question.position).limit(limit).offset(offset)
    return list(_read_canonical(ctx, query).values())


def load_at(ctx: Context, benchmark_id: str, positions: Collection[int]) -> dict[int, Canonical]:
    """The stored questions at `positions`, by position (one query): a page of a subset or
    retry run's results needs those alone, not every question between its first and last."""
    query = _canonical_rows(benchmark_id).where(Question.position.in_(positions))
    return _read_canonical(ctx, query)


def _canonical_rows(benchmark_id: str) -> _Rows:
    return select(
        Question.position,
        Question.prompt,
        cast(Question.answers, Text),
        cast(Question.choices, Text),
        cast(Question.tags, Text),
        cast(Question.meta, Text),
    ).where(Question.benchmark_id == benchmark_id)


def _read_canonical(ctx: Context, query: _Rows) -> dict[int, Canonical]:
    rows = ctx.session.execute(query).all()
    decoded = _decoded(
        f"[{answers},{choices or 'null'},{tags},{meta}]"
        for _, _, answers, choices, tags, meta in rows
    )
    return {
        row[0]: Canonical(
            row[1],
            tuple(answers),
            tuple(choices) if choices is not None else None,
            tuple(tags),
            json.dumps(meta, sort_keys=True) if meta else "{}",  # most have none
        )
        for row, (answers, choices, tags, meta) in zip(rows, decoded, strict=True)
    }


def load_keys(ctx: Context, benchmark_id: str) -> tuple[list[Key], list[tuple[str, ...]]]:
    """Answer keys and tags in question order: all that scoring needs (no prompts, no metadata)."""
    rows = ctx.session.execute(
        select(
            cast(Question.answers, Text), cast(Question.choices, Text), cast(Question.tags, Text)
        )
        .where(Question.benchmark_id == benchmark_id)
        .order_by(Question.position)
    )
    keys, tags = [], []
    for answers, choices, labels in _decoded(
        f"[{answers},{choices or 'null'},{labels}]" for answers, choices, labels in rows
    ):
        keys.append(Key(tuple(answers), tuple(choices) if choices is not None else None))
        tags.append(tuple(labels))
    return keys, tags


def _decoded(documents: Iterable[str]) -> list[Any]:
    """Each row's JSON columns, stored as text and joined into one array per row, decoded as
    one document: the C decoder runs once per query instead of once per column and row (it was
    half the time of rescoring a large run; reading 10,000 questions took 161 ms, now 90)."""
    return list(json.loads(f"[{','.join(documents)}]"))


def replace_questions(ctx: Context, benchmark_id: str, questions: list[Canonical]) -> None:
    """Store `questions` as the benchmark's full list, in one bulk statement each way."""
    ctx.session.execute(delete(Question).where(Question.benchmark_id == benchmark_id))
    if not questions:
        return
    ctx.session.execute(
        insert(Question),
        [
            {
                "id": new_id("q"),
                "benchmark_id": benchmark_id,
                "position": position,
                "prompt": question.prompt,
                "choices": list(question.choices) if question.choices is not None else None,
                "answers": list(question.answers),
                "tags": list(question.tags),
                "meta": json.loads(question.metadata),
            }
            for position, question in enumerate(questions)
        ],
    )
