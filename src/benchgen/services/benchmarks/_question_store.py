"""A benchmark's stored questions, read and replaced without permission checks: for the services
that have already required reading or editing the benchmark (lifecycle, runs, results)."""

from __future__ import annotations

import json

from sqlalchemy import Text, cast, delete, insert, select

from benchgen.core.context import Context
from benchgen.core.ids import new_id
from benchgen.db.tables import Question
from benchgen.evals.types import Key
from benchgen.services.benchmarks.questions import Canonical


def load_canonical(
    ctx: Context, benchmark_id: str, limit: int | None = None, offset: int = 0
) -> list[Canonical]:
    """The stored questions of a benchmark, in order, in canonical form (one query; a window of
    them when `limit` is given, cut by the database)."""
    rows = ctx.session.execute(
        select(Question.prompt, Question.answers, Question.choices, Question.tags, Question.meta)
        .where(Question.benchmark_id == benchmark_id)
        .order_by(Question.position)
        .limit(limit)
        .offset(offset)
    )
    return [
        Canonical(
            prompt,
            tuple(answers),
            tuple(choices) if choices is not None else None,
            tuple(tags),
            json.dumps(meta, sort_keys=True),
        )
        for prompt, answers, choices, tags, meta in rows
    ]


def load_keys(ctx: Context, benchmark_id: str) -> tuple[list[Key], list[tuple[str, ...]]]:
    """Answer keys and tags in question order: all that scoring needs (no prompts, no metadata)."""
    rows = ctx.session.execute(
        select(
            cast(Question.answers, Text), cast(Question.choices, Text), cast(Question.tags, Text)
        )
        .where(Question.benchmark_id == benchmark_id)
        .order_by(Question.position)
    )
    # One JSON document for every row: the C decoder runs once instead of three times per
    # question, which was half the time of rescoring a large run.
    text = ",".join(
        f"[{answers},{choices or 'null'},{labels}]" for answers, choices, labels in rows
    )
    keys, tags = [], []
    for answers, choices, labels in json.loads(f"[{text}]"):
        keys.append(Key(tuple(answers), tuple(choices) if choices is not None else None))
        tags.append(tuple(labels))
    return keys, tags


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
