"""The AI judge's token counts of a run by someone outside the benchmark's team stay with the
team: the judge is asked with the answer key, and a verdict's wording sets its length."""

from __future__ import annotations

from benchgen.core.context import Principal
from benchgen.jobs.worker import Worker
from benchgen.services.benchmarks import judges, lifecycle
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import StubOpenAI
from tests.services import test_judge
from tests.services.test_judge import CAPITALS, stub_model
from tests.support import World

stub = test_judge.stub  # a fixture shared with the judge's tests


def test_a_strangers_run_shows_no_judge_tokens_its_team_does(
    world: World, runtime: Runtime, stub: StubOpenAI
) -> None:
    """Read live as each batch is judged, the counts told one answer's length of key (input)
    and its verdict (output: the stub's judge reasons only before CORRECT)."""
    ana, sam = world.user("ana@example.com"), world.user("sam@example.com")
    bm = world.benchmark(ana, CAPITALS)
    owner = Principal.web(ana)
    args = ("openai_compat", "judge-1", stub.base_url, "sk-judge-key")
    world.do(owner, judges.set_judge, bm, *args, allow_others=True)
    world.do(owner, lifecycle.publish_benchmark, bm)
    run_id = world.do(Principal.web(sam), launch.start_run, bm, stub_model(world, stub)).id
    while Worker(runtime).run_once():
        pass
    theirs = world.do(Principal.web(sam), launch.get_run, run_id)
    assert theirs.status == "completed" and theirs.input_tokens > 0
    assert (theirs.judge_input_tokens, theirs.judge_output_tokens) == (0, 0)
    teams = world.do(owner, launch.get_run, run_id)
    assert teams.judge_input_tokens > 0 and teams.judge_output_tokens > 0
