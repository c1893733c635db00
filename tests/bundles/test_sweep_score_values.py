"""A score the program wrote that is not a number is named in the run's error without its
value: that error reaches whoever reads the run, and the column may be hidden from them. The
value is in the programs' output, which only the team reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchgen.bundles import evaluation
from benchgen.bundles.competition import TaskSpec
from benchgen.bundles.evaluation import Environment, Submission, evaluate_task
from benchgen.bundles.layout import ProgramSpec, ResolvedTask
from benchgen.bundles.programs import ProgramDirs
from benchgen.bundles.sandbox import Limits
from benchgen.bundles.supervisor import Outcome


def test_a_non_numeric_score_is_shown_only_in_the_teams_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def scorer(kind: str, command: str, dirs: ProgramDirs, **_: Any) -> Outcome:
        (dirs.output / "scores.json").write_text('{"public": 0.5, "private": "0.93 on the rest"}')
        return Outcome(0, "", "", None, 0.1)

    monkeypatch.setattr(evaluation, "run_program", scorer)
    (tmp_path / "program").mkdir()
    (tmp_path / "work").mkdir()
    task = ResolvedTask(
        TaskSpec(0, "Answer", "", "scoring_program"),
        ProgramSpec(tmp_path / "program", "python score.py", "scoring_program"),
        None,
        None,
        None,
    )
    env = Environment(tmp_path, Limits())
    results = Submission(results=tmp_path / "program")
    outcome = evaluate_task(task, tmp_path / "work", env, results, ["public", "private"])
    assert outcome.error == "The score for private is not a finite number."
    assert "0.93 on the rest" in outcome.printed()
