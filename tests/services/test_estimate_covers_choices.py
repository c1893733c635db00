"""A run's reservation covers what it really costs: the choices are priced with the prompt."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from benchgen.core.context import Principal
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.evals.stub_openai import StubOpenAI
from tests.services.test_runs import priced_model, work_all
from tests.support import World

pytestmark = pytest.mark.both_backends  # the estimate sums the stored choices in SQL

PER_1K = 10
LONG_CHOICES = {
    "title": "Long choices",
    "format": "mcq",
    "questions": [
        {
            "prompt": f"Q{i}?",
            "choices": [f"{label}{i} " + "word " * 390 for label in "abcd"],
            "answer": "A",
        }
        for i in range(2)
    ],
}


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(latency_s=0.001) as server:
        yield server


@pytest.mark.parametrize("subset", [None, {"kind": "first", "n": 2}], ids=["all", "subset"])
def test_a_run_of_long_choices_is_charged_in_full(
    world: World, runtime: Runtime, stub: StubOpenAI, subset: dict[str, object] | None
) -> None:
    """The estimate counted the prompts alone: the choices' tokens went past the reservation,
    and the cost was cut to it, the rest free."""
    runtime.settings = runtime.settings.model_copy(update={"model_host_allowlist": "127.0.0.1"})
    ana = world.user("ana@example.com", credits_=1000)
    bm = world.benchmark(ana, LONG_CHOICES)
    model = priced_model(world, stub, per_question=0, per_1k=PER_1K)
    options = {"subset": subset} if subset else None
    run = world.do(Principal.web(ana), launch.start_run, bm, model, options=options)
    work_all(runtime)
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    used = math.ceil((done.input_tokens + done.output_tokens) * PER_1K / 1000)
    assert done.status == "completed" and done.input_tokens > 3000
    assert done.cost == used <= done.estimated_cost
