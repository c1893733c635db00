"""Evaluating one submission against a loaded bundle: ingestion, scoring, and the leaderboard's
computed columns. Plain values in and out; programs run through the sandbox."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from benchgen.bundles.competition import LeaderboardSpec
from benchgen.bundles.layout import ProgramSpec, ResolvedTask
from benchgen.bundles.programs import ProgramDirs, read_scores, run_program
from benchgen.bundles.sandbox import Limits, Outcome
from benchgen.bundles.trees import drop_special_entries
from benchgen.core.errors import InvalidInput
from benchgen.core.secrets import redact_secrets

LOG_TAIL_CHARS = 4000  # of each program's stdout and stderr, kept in the run log


@dataclass(frozen=True)
class Environment:
    """How programs run on this deployment."""

    runtime: Path
    limits: Limits
    allow_unsandboxed: bool = False


@dataclass(frozen=True)
class Submission:
    """What is evaluated: a folder of results, a folder of code for the ingestion program, or
    neither (a model answers through the ingestion program and the proxy)."""

    results: Path | None = None
    code: Path | None = None
    socket: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskOutcome:
    """One task's scores, or why it has none; `predictions` is the folder that was scored."""

    task_index: int
    scores: dict[str, float]
    log: list[str]
    error: str | None
    predictions: Path | None

    def printed(self) -> str:
        """What the task's programs printed (each one's tail), secrets redacted: a program may
        print its environment, and the run's proxy key must never reach storage or a page."""
        return redact_secrets("\n".join(self.log))


def evaluate_task(
    task: ResolvedTask,
    work: Path,
    env: Environment,
    submission: Submission,
    columns: Sequence[str],
) -> TaskOutcome:
    """Run the task's ingestion program when the submission needs one, then its scoring program,
    and read the `columns` it must report.

    `work` is an empty throw-away folder; the scored predictions stay in it for the caller.
    """
    log: list[str] = []
    results = submission.results
    shared = _mkdir(work / "shared")
    if results is None:
        if task.ingestion_program is None:
            return TaskOutcome(task.spec.index, {}, log, "this task takes results only", None)
        results = _mkdir(work / "res")
        outcome = _run(
            "ingestion",
            task.ingestion_program,
            env,
            log,
            submission,
            ProgramDirs(
                program=task.ingestion_program.folder,
                output=results,
                input_data=task.input_data,
                ingested_program=submission.code or _mkdir(work / "empty"),
                shared=shared,
            ),
        )
        if not outcome.ok:
            return TaskOutcome(task.spec.index, {}, log, _failure("ingestion", outcome), results)
        # A submission's code ran in there: a link it left would lead the scoring program to
        # the reference data (a perfect score for nothing), a fifo would stall it.
        for written in (results, shared):
            drop_special_entries(written)
    output = _mkdir(work / "scores")
    dirs = ProgramDirs(
        program=task.scoring_program.folder,
        output=output,
        ref=task.reference_data,
        res=results,
        shared=shared,
    )
    outcome = _run("scoring", task.scoring_program, env, log, Submission(), dirs)
    if not outcome.ok:
        return TaskOutcome(task.spec.index, {}, log, _failure("scoring", outcome), results)
    try:
        scores = read_scores(output, columns)
    except InvalidInput as exc:
        # The details (what the program wrote) go to its output, which only the team reads.
        log.extend(f"[scores] {'/'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors)
        return TaskOutcome(task.spec.index, {}, log, str(exc), results)
    return TaskOutcome(task.spec.index, scores, log, None, results)


def _run(
    kind: Literal["scoring", "ingestion"],
    program: ProgramSpec,
    env: Environment,
    log: list[str],
    submission: Submission,
    dirs: ProgramDirs,
) -> Outcome:
    log.append(f"{kind.capitalize()} program: {program.command}")
    outcome = run_program(
        kind,
        program.command,
        dirs,
        runtime=env.runtime,
        limits=env.limits,
        env=submission.env,
        socket=submission.socket,
        allow_unsandboxed=env.allow_unsandboxed,
    )
    for name, text in (("stdout", outcome.stdout), ("stderr", outcome.stderr)):
        if text.strip():
            tail = text[-LOG_TAIL_CHARS:]
            log.extend(f"[{kind} {name}] {line}" for line in tail.rstrip().splitlines())
    log.append(f"{kind.capitalize()} program ended in {outcome.seconds:.1f} s")
    return outcome


def _failure(kind: str, outcome: Outcome) -> str:
    if outcome.stopped:
        return f"the {kind} program was {outcome.stopped}"
    return f"the {kind} program failed (exit code {outcome.exit_code})"


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def scored_columns(leaderboard: LeaderboardSpec) -> list[str]:
    """The columns a scoring program must report (computed ones are worked out here)."""
    return [column.key for column in leaderboard.columns if not column.computation]


def combine_scores(
    outcomes: Sequence[TaskOutcome], leaderboard: LeaderboardSpec
) -> dict[str, float]:
    """The leaderboard's columns from the tasks' scores: a column reported by several tasks
    is their mean; computed columns (sum, avg, min, max) are worked out over the others.

    Raises:
        InvalidInput: a declared column that no task reported.
    """
    reported: dict[str, list[float]] = {}
    for outcome in outcomes:
        for key, value in outcome.scores.items():
            reported.setdefault(key, []).append(value)
    scores: dict[str, float] = {}
    missing = []
    for column in leaderboard.columns:
        if column.computation:
            continue
        values = reported.get(column.key)
        if values:
            scores[column.key] = _finite(column.key, "avg", values)
        else:
            missing.append(column.key)
    if missing:
        raise InvalidInput(
            f"The scoring program did not report the column(s) {', '.join(missing)}.",
            [{"loc": ["scores", key], "msg": "declared column missing"} for key in missing],
        )
    by_index = {column.index: column.key for column in leaderboard.columns}
    for column in leaderboard.columns:
        if column.computation:
            keys = (by_index.get(index) for index in column.computation_indexes)
            parts = [scores[key] for key in keys if key in scores]
            if parts:
                scores[column.key] = _finite(column.key, column.computation, parts)
    return scores


def _finite(column: str, computation: str, values: list[float]) -> float:
    """`computation` over finite `values`, refused when the result is not a finite number."""
    try:
        result = _compute(computation, values)
    except OverflowError:  # fsum's, when a partial sum passes the largest float
        result = math.inf
    if not math.isfinite(result):
        # The scores are the participant's to choose: 1e308 twice is no crash and no ranking.
        raise InvalidInput(
            f"The {computation} of the scores for {column} is too large to be a number.",
            [{"loc": ["scores", column], "msg": "not a finite number"}],
        )
    return result


def _compute(computation: str, values: list[float]) -> float:
    if computation == "sum":
        return math.fsum(values)
    if computation == "avg":
        try:
            return math.fsum(values) / len(values)
        except OverflowError:  # each part divided first: a mean of finite scores is finite
            return math.fsum(value / len(values) for value in values)
    return min(values) if computation == "min" else max(values)
