"""Which questions a run asks and how long its prompts are, unguarded (launch has required
reading the benchmark first): the subset, the few-shot examples left out of scoring, and the
prompt length the estimate prices."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Text, cast, func, select

from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.db.tables import Question
from benchgen.evals.prompts import render_prompt
from benchgen.evals.types import Item
from benchgen.services.runs.settings import EXAMPLE_TAG, RunOptions, choose_positions
from benchgen.services.runs.settings import extra_prompt_chars as _extra

EXAMPLE_OVERHEAD_CHARS = 40  # "Example n:" and "ANSWER:" around each worked example
# What a prompt adds to a question's own text at most: the instruction and 26 choice labels.
PROMPT_OVERHEAD_CHARS = len(render_prompt(Item(0, "", ("",) * 26)))
# The choices as stored JSON text: never shorter than their lines in the prompt ("A. …").
CHOICES_CHARS = func.coalesce(func.length(cast(Question.choices, Text)), 0)


@dataclass(frozen=True)
class Asked:
    """The questions a run asks (None: all of them) and what pricing them needs."""

    positions: list[int] | None
    few_shot_positions: list[int]
    count: int
    prompt_chars: int  # of one sample of every asked question, choices and additions included
    partial: bool


def plan_questions(
    ctx: Context,
    benchmark_id: str,
    options: RunOptions,
    may_read_key: bool,
    chosen: list[int] | None = None,
) -> Asked:
    """The questions to ask: `chosen` positions (a retry), else the subset, else all; minus
    the few-shot examples, which are shown, never scored.

    Raises:
        InvalidInput: a subset from someone who may not read the key, more few-shot examples
            than the principal may draw, or nothing left to ask.
    """
    settings = options.settings
    if options.subset is not None and not may_read_key:
        # A score over one chosen question is that question's right or wrong (docs/permissions).
        raise invalid(
            ["subset"],
            "only the benchmark's owner and collaborators may run part of it; anyone else's "
            "run asks every question, so its score never tells one question's answer",
        )
    if options.subset is None and chosen is None and settings.few_shot == 0:
        count, chars = _totals(ctx, benchmark_id)
        extra = PROMPT_OVERHEAD_CHARS + _extra(settings, 0)
        return Asked(None, [], count, chars + count * extra, False)
    rows = ctx.session.execute(
        select(Question.tags, func.length(Question.prompt), Question.choices, Question.answers)
        .where(Question.benchmark_id == benchmark_id)
        .order_by(Question.position)
    ).all()
    tags = [tuple(row[0]) for row in rows]
    sizes = [int(row[1]) + len(str(row[2] or "")) + len(str(row[3])) for row in rows]
    examples = _examples(tags, settings.few_shot, may_read_key)
    picked = chosen if chosen is not None else choose_positions(options.subset, tags)
    asked = [p for p in (range(len(rows)) if picked is None else picked) if p not in examples]
    if rows and not asked:
        if picked is not None and not picked:
            raise invalid(["subset"], "no question of the benchmark matches the subset")
        raise invalid(
            ["settings", "few_shot"], "the few-shot examples take every question the run asks"
        )
    example_chars = sum(sizes[p] + EXAMPLE_OVERHEAD_CHARS for p in examples)
    # The choices are sent with each question: leaving them out let a benchmark of long
    # choices cost more than its reservation, the rest given away.
    chars = sum(int(rows[p][1]) + len(str(rows[p][2] or "")) for p in asked)
    chars += len(asked) * (PROMPT_OVERHEAD_CHARS + _extra(settings, example_chars))
    # A subset that takes every question (the first 500 of 200) is the whole benchmark.
    partial = chosen is not None or (picked is not None and len(picked) < len(rows))
    return Asked(asked if partial or examples else None, examples, len(asked), chars, partial)


def _examples(tags: list[tuple[str, ...]], k: int, may_read_key: bool) -> list[int]:
    """The few-shot examples: questions the owner tagged as public examples first; the rest,
    only for those who may read the key, from the first questions (their answers are sent)."""
    marked = [p for p, held in enumerate(tags) if EXAMPLE_TAG in held][:k]
    if len(marked) == k:
        return marked
    if not may_read_key:
        raise invalid(
            ["settings", "few_shot"],
            f"this benchmark has {len(marked)} question(s) tagged {EXAMPLE_TAG!r} as public "
            "examples; only its owner and collaborators may draw other questions as examples",
        )
    rest = [p for p in range(len(tags)) if p not in marked][: k - len(marked)]
    if len(marked) + len(rest) < k or len(tags) <= k:
        raise invalid(["settings", "few_shot"], "more examples than the benchmark can spare")
    return sorted(marked + rest)


def _totals(ctx: Context, benchmark_id: str) -> tuple[int, int]:
    count, chars = ctx.session.execute(
        select(
            func.count(),
            func.coalesce(func.sum(func.length(Question.prompt) + CHOICES_CHARS), 0),
        ).where(Question.benchmark_id == benchmark_id)
    ).one()
    return int(count), int(chars)
