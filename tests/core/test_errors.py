"""Refusals of bad input name the first problem's place and count the others."""

from __future__ import annotations

import pytest

from benchgen.core.errors import InvalidInput, invalid, invalid_all
from benchgen.services.specs import BenchmarkIn, parse


def test_several_problems_name_the_first_and_count_the_rest() -> None:
    errors = [{"loc": ["questions", 0, "prompt"], "msg": "must not be empty"}]
    errors.append({"loc": ["questions", 2, "answer"], "msg": "must be a choice"})
    refused = invalid_all(errors)
    assert refused.message == "questions.0.prompt: must not be empty (and 1 more)"
    assert refused.errors == errors
    assert invalid_all(errors, "line 3").message == "line 3: must not be empty (and 1 more)"


def test_one_problem_reads_as_invalid_says_it() -> None:
    assert (
        invalid_all([{"loc": ["title"], "msg": "too long"}]).message
        == invalid(["title"], "too long").message
    )


def test_a_problem_with_the_whole_input_has_no_stray_place() -> None:
    """A body that is no object at all read ": Input should be a valid dictionary …"."""
    with pytest.raises(InvalidInput) as refused:
        parse(BenchmarkIn, ["not", "an", "object"])
    assert refused.value.message.startswith("Input should be a valid dictionary")
