"""Replies as stored: one past the deployment's cap keeps its head and tail around a marker;
characters no database can store (NUL, lone surrogates) are replaced."""

from __future__ import annotations

import re
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
REPLACEMENT = "\ufffd"  # one character for one: a clipped reply stays in its cap
# PostgreSQL's text refuses NUL; a lone surrogate (JSON's "\ud800", valid in a reply) is no
# UTF-8 at all, refused by both databases and by every file written as UTF-8.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def clip_reply(text: str, limit: int) -> str:
    """`text` whole when it has at most `limit` characters; else its first quarter and last
    three quarters of `limit`, with a marker saying how much was cut between them."""
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return text[:head] + _MARKER.format(count=len(text) - limit) + text[-tail:]


def clip_answers(answers: list[Answer], limit: int) -> list[Answer]:
    """The answers as they can be stored: every reply longer than `limit` clipped, and NUL
    characters and lone surrogates in replies and errors shown as U+FFFD (the others as they
    are)."""
    return [_storable(_clipped(answer, limit)) for answer in answers]


def _clipped(answer: Answer, limit: int) -> Answer:
    if answer.raw is None or len(answer.raw) <= limit:
        return answer
    return replace(answer, raw=clip_reply(answer.raw, limit))


def _storable(answer: Answer) -> Answer:
    # One such character failed its batch at every retry; the run was then refunded in full,
    # the answers recorded before it kept (replies for free).
    raw, error = answer.raw, answer.error
    if not _UNSTORABLE.search(raw or "") and not _UNSTORABLE.search(error or ""):
        return answer
    raw = _UNSTORABLE.sub(REPLACEMENT, raw) if raw is not None else None
    error = _UNSTORABLE.sub(REPLACEMENT, error) if error is not None else None
    return replace(answer, raw=raw, error=error)
