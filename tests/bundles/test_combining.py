"""A run's leaderboard columns combined from its tasks' scores: means and computed columns."""

from __future__ import annotations

import pytest

from benchgen.bundles.competition import ColumnSpec, LeaderboardSpec
from benchgen.bundles.evaluation import TaskOutcome, combine_scores
from benchgen.core.errors import InvalidInput

BOARD = LeaderboardSpec(
    0,
    "main",
    "Main",
    (
        ColumnSpec("accuracy", "Accuracy", 0),
        ColumnSpec("errors", "Errors", 1),
        ColumnSpec("total", "Sum", 2, computation="sum", computation_indexes=(0, 1)),
        ColumnSpec("mean", "Mean", 3, computation="avg", computation_indexes=(0, 1)),
    ),
)


def outcome(task: int, **scores: float) -> TaskOutcome:
    return TaskOutcome(task, scores, [], None, None)


def test_columns_are_task_means_and_computed_over_them() -> None:
    combined = combine_scores(
        [outcome(0, accuracy=0.5, errors=1), outcome(1, accuracy=1.0, errors=3)], BOARD
    )
    assert combined == {"accuracy": 0.75, "errors": 2.0, "total": 2.75, "mean": 1.375}


def test_a_mean_of_the_largest_scores_is_still_a_number() -> None:
    """fsum overflows on 1e308 + 1e308 although their mean is 1e308."""
    big = [outcome(0, accuracy=1e308, errors=0), outcome(1, accuracy=1e308, errors=0)]
    assert combine_scores(big, LeaderboardSpec(0, "m", "M", BOARD.columns[:2])) == {
        "accuracy": 1e308,
        "errors": 0.0,
    }
    assert combine_scores(big, BOARD)["mean"] == 5e307


@pytest.mark.parametrize("scores", [[1e308, 1e308], [1.7e308, 1e308]])
def test_a_computed_column_past_the_largest_float_is_refused_with_its_place(
    scores: list[float],
) -> None:
    """The participant chooses the scores: an overflow is a clear refusal, not a crash that the
    job's retries would repeat."""
    with pytest.raises(InvalidInput, match="sum of the scores for total") as raised:
        combine_scores([outcome(0, accuracy=scores[0], errors=scores[1])], BOARD)
    assert raised.value.details["errors"] == [
        {"loc": ["scores", "total"], "msg": "not a finite number"}
    ]
