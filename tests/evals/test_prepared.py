"""Rescoring's fast path: stored answers scored by `stored_scorer` (options read once, no Key or
Answer made per answer, accepted answers normalised once, shared verdicts) get exactly what
the per-answer entry point gives, and exact matching stays "normalise both sides"."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from benchgen.evals.scorers.exact import score_exact
from benchgen.evals.scorers.extract import extract_final_answer
from benchgen.evals.scorers.normalize import STEP_NAMES, Steps, as_written, normalize_with
from benchgen.evals.scorers.registry import JUDGE, SCORERS, score, stored_scorer, validate_scoring
from benchgen.evals.types import Answer, Key

# Pieces of replies and keys: labels, letters, markup, articles, numbers, punctuation, and
# non-ASCII text (accents, full-width and compatibility forms) that takes the slow paths.
_PIECES = st.sampled_from(
    [
        *("ANSWER: ", "Answer:", "final answer - ", "**", "\n", " ", "\t", "B", "b", "(c)", "D."),
        *("Paris", "paris", "The ", "an ", "a", "é", "É", "e\u0301", "Ⅳ", "Ｂ", "ﬁ", "4", "four"),
        *("3.0", "1/2", "\\boxed{", "}", "$", ".", "!", "-", "'", "?", "¿", "x+"),
    ]
)
_TEXTS = st.one_of(st.lists(_PIECES, max_size=10).map("".join), st.text(max_size=12))
_STEPS = st.fixed_dictionaries({}, optional=dict.fromkeys(STEP_NAMES, st.booleans()))
_METHODS = sorted(name for name in SCORERS if name != JUDGE)


def _settings(method: str, steps: dict[str, bool]) -> dict[str, Any]:
    fmt = "mcq" if "mcq" in SCORERS[method].formats else "qa"
    options = steps if method in ("exact", "includes") else {}
    return validate_scoring(fmt, {"method": method, "options": options})


@given(
    st.sampled_from(_METHODS),
    _STEPS,
    st.one_of(st.none(), _TEXTS),
    st.lists(_TEXTS, max_size=3),
    st.one_of(st.none(), st.lists(_TEXTS, max_size=5)),
    st.one_of(st.none(), st.dictionaries(_TEXTS, st.floats(-20, 0), max_size=4)),
)
def test_a_stored_answer_scores_as_the_answer_itself(
    method: str,
    steps: dict[str, bool],
    raw: str | None,
    answers: list[str],
    choices: list[str] | None,
    letters: dict[str, float] | None,
) -> None:
    settings = _settings(method, steps)
    key = Key(tuple(answers), None if choices is None else tuple(choices))
    expected = score(Answer(0, "", raw, None, 0, 0, 0, 1, letters), key, settings)
    scorer = stored_scorer(settings)
    assert scorer(raw, None, letters, answers, choices) == expected
    # Again, now that the accepted answers and verdicts it remembers are in its caches.
    assert scorer(raw, None, letters, answers, choices) == expected


@given(_STEPS, _TEXTS, st.lists(_TEXTS, min_size=1, max_size=3))
def test_exact_match_normalises_both_sides(
    options: dict[str, bool], raw: str, answers: list[str]
) -> None:
    extracted = extract_final_answer(raw)
    assume(extracted is not None)
    assert extracted is not None
    steps = Steps.from_options(options)
    scored = score_exact(raw, Key(tuple(answers)), options)
    found = normalize_with(extracted, steps)
    if found:
        accepted = {normalize_with(answer, steps) for answer in answers}
        assert (scored.outcome == "correct") == (found in accepted)
    else:  # nothing left to compare: the reply as written, case and a final stop aside
        written = {as_written(answer) for answer in answers}
        assert (scored.outcome == "correct") == (as_written(extracted) in written)
