"""A run's extra samples (several answers per question) in its results and downloads: every
viewer of the answers gets the replies, only the benchmark's team their verdicts (scored with
the run's scoring, as pass@k is), and the CSV gives them columns of their own."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

import pytest

from benchgen.core.context import Principal
from benchgen.services.benchmarks import lifecycle
from benchgen.services.runs import breakdown, launch, results
from benchgen.services.runtime import Runtime
from tests.services.test_runs import BIG_MCQ, work_all
from tests.support import World, export_whole

RANDOM = "mdl_builtin_random"  # its samples differ with the seed
PUBLIC_SAMPLE = {"sample", "raw", "error"}
TEAM_SAMPLE = {*PUBLIC_SAMPLE, "extracted", "outcome", "correct", "score"}


@dataclass(frozen=True)
class Sampled:
    """ana's published benchmark, sam's run of it asking three samples per question."""

    ana: str
    sam: str
    benchmark: str
    run: str


def sampled_run(world: World, runtime: Runtime) -> Sampled:
    ana, sam = world.user("ana@example.com"), world.user("sam@example.com")
    bm = world.benchmark(ana, BIG_MCQ)
    world.do(Principal.web(ana), lifecycle.publish_benchmark, bm)
    options = {"settings": {"samples": 3, "seed": 11}}
    run = world.do(Principal.web(sam), launch.start_run, bm, RANDOM, None, options).id
    work_all(runtime)
    return Sampled(ana, sam, bm, run)


def _csv(world: World, principal: Principal, run_id: str) -> list[dict[str, str]]:
    media, text = world.do(principal, export_whole, run_id, "csv")
    assert media == "text/csv"
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.both_backends
def test_the_team_sees_every_sample_scored_as_pass_at_k_scores_it(
    world: World, runtime: Runtime
) -> None:
    made = sampled_run(world, runtime)
    owner = Principal.web(made.ana)
    rows = world.do(owner, results.list_results, made.run)
    assert len(rows) == 12
    for row in rows:
        assert [sample["sample"] for sample in row["samples"]] == [1, 2]
        assert all(set(sample) == TEAM_SAMPLE and sample["raw"] for sample in row["samples"])
    # pass@3 of three samples: the share of questions with a sample right, these verdicts'.
    anyone_right = [row["correct"] or any(s["correct"] for s in row["samples"]) for row in rows]
    sampling = world.do(owner, launch.get_run, made.run).summary["sampling"]
    assert sampling["pass_at_k"]["3"] == pytest.approx(sum(anyone_right) / 12)
    page = world.do(owner, breakdown.list_breakdown, made.run, "all", "", 5, 3)
    assert [row.position for row in page.rows] == [3, 4, 5, 6, 7]
    assert [row.samples for row in page.rows] == [row["samples"] for row in rows[3:8]]
    _, text = world.do(owner, export_whole, made.run, "jsonl")
    assert [json.loads(line)["samples"] for line in text.splitlines()] == [
        row["samples"] for row in rows
    ]


def test_the_launcher_sees_the_replies_of_every_sample_not_their_verdicts(
    world: World, runtime: Runtime
) -> None:
    made = sampled_run(world, runtime)
    rows = world.do(Principal.web(made.sam), results.list_results, made.run, 4, 2)
    assert [row["position"] for row in rows] == [2, 3, 4, 5]
    for row in rows:
        assert "outcome" not in row
        assert [set(sample) for sample in row["samples"]] == [PUBLIC_SAMPLE] * 2
    _, text = world.do(Principal.web(made.sam), export_whole, made.run, "jsonl")
    assert all(
        "outcome" not in sample
        for line in text.splitlines()
        for sample in json.loads(line)["samples"]
    )


def test_the_csv_gives_each_sample_columns_of_its_own(world: World, runtime: Runtime) -> None:
    made = sampled_run(world, runtime)
    owner, sam = Principal.web(made.ana), Principal.web(made.sam)
    theirs = _csv(world, sam, made.run)
    assert len(theirs) == 12  # still one row per question
    extra = ["sample_1_raw", "sample_1_error", "sample_2_raw", "sample_2_error"]
    assert list(theirs[0])[-4:] == extra and "outcome" not in theirs[0]
    listed = world.do(sam, results.list_results, made.run)
    for row, shown in zip(theirs, listed, strict=True):
        assert [row["sample_1_raw"], row["sample_2_raw"]] == [s["raw"] for s in shown["samples"]]
    team = _csv(world, owner, made.run)
    fields = ("raw", "error", "extracted", "outcome", "correct", "score")
    assert list(team[0])[-12:] == [f"sample_{n}_{name}" for n in (1, 2) for name in fields]
    detailed = world.do(owner, results.list_results, made.run)
    for row, shown in zip(team, detailed, strict=True):
        assert row["sample_2_outcome"] == shown["samples"][1]["outcome"]
        assert row["sample_2_correct"] == str(shown["samples"][1]["correct"])

    single = world.do(owner, launch.start_run, made.benchmark, RANDOM).id
    work_all(runtime)
    assert not any(name.startswith("sample_") for name in _csv(world, owner, single)[0])
