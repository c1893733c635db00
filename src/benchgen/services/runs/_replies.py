"""Replies as stored: one past the deployment's cap keeps its head and tail around a marker."""

from __future__ import annotations

from dataclasses import replace

from benchgen.evals.types import Answer

# An endpoint may send replies of megabytes (the transport's cap is 4 MiB) and a run stores one
# per question and sample, which the run page, results and downloads then hold in memory. The
# tail gets three quarters of the cap because a reply's final answer is at its end (the scorers
# take the last `ANSWER:` line or `\boxed{}`, the judge's last `VERDICT:` line), however long a
# reasoning model wrote before it; the head shows how the reply began. The clipped text is the
# one scored and stored, so rescoring, rejudging and anyone reading the reply reach the verdict
# the run gave. The marker stays on the line of the cut: a line cut in two never starts a fresh
# line in the tail that could read as an answer label.
CUT_MARK = "[… BenchGen cut"
_MARKER = " " + CUT_MARK + " {count:,} characters of this reply here …] "


def clip_reply(text: str, limit: int) -> str:
    """`text` whole when it has at most `limit` characters; else its first quarter and last
    three quarters of `limit`, with a marker saying how much was cut between them."""
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return text[:head] + _MARKER.format(count=len(text) - limit) + text[-tail:]


def clip_answers(answers: list[Answer], limit: int) -> list[Answer]:
    """The answers with every reply longer than `limit` clipped (the others as they are)."""
    return [
        replace(answer, raw=clip_reply(answer.raw, limit))
        if answer.raw is not None and len(answer.raw) > limit
        else answer
        for answer in answers
    ]
