"""The client's copies of the server's status vocabularies match the server's enums."""

from __future__ import annotations

from typing import get_args

from benchgen.client import FINAL_STATUSES, shapes
from benchgen.core.statuses import RUN_FINAL, ModelStatus, RunStatus, TurnStatus


def test_final_run_statuses_match() -> None:
    assert set(FINAL_STATUSES) == {str(status) for status in RUN_FINAL}


def test_turn_statuses_match() -> None:
    assert set(get_args(shapes.TurnStatus)) == {str(status) for status in TurnStatus}


def test_run_and_model_statuses_match() -> None:
    assert set(get_args(shapes.RunStatus)) == {str(status) for status in RunStatus}
    assert set(get_args(shapes.ModelStatus)) == {str(status) for status in ModelStatus}
