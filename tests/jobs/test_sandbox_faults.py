"""A worker killed with SIGKILL while an organiser's scoring program runs in its sandbox leaves
no sandbox process behind, and another worker then scores the submission."""

from __future__ import annotations

import time

from benchgen.core.context import Principal
from benchgen.services.benchmarks import bundles
from benchgen.services.runs import launch, submissions
from benchgen.services.runtime import Runtime
from tests.bundle_factory import SCORER, bundle, require_sandbox, results
from tests.processes import Deployment, processes_running, wait_until
from tests.support import World

# Slow only for a submission that answers "slow": the bundle's own solution scores at once.
SLOW_SCORER = SCORER.replace(
    "right = sum(", "import time\nif 'slow' in found.values():\n    time.sleep(8)\nright = sum(", 1
)
SCORING = b"/app/program/score.py"


def test_a_killed_worker_leaves_no_sandbox_and_the_next_one_scores_once(
    world: World, runtime: Runtime
) -> None:
    require_sandbox()
    ana = world.user("ana@example.com")
    created = world.do(
        Principal.web(ana), bundles.upload_bundle, bundle(scorer=SLOW_SCORER), "s.zip"
    )
    answers = results({"q1": "slow", "q2": "4"})
    run = world.do(Principal.web(ana), submissions.submit, created.benchmark.id, answers, "a.zip")
    live = Deployment(runtime)
    try:
        doomed = live.start("worker", "--threads", "1")
        # The sandbox's command line names the scoring program and this test's folders.
        wait_until(lambda: live.started_here(SCORING), 120, "the scoring program")
        sandboxed = live.started_here(b"bwrap")
        doomed.kill()  # SIGKILL: the worker gets no chance to clean up after itself
        doomed.wait(30)
        wait_until(lambda: not (processes_running(b"") & sandboxed), 30, "the sandbox to die")
        live.start("worker", "--threads", "1")  # takes the job once the 3 s lease runs out
        wait_until(lambda: _status(world, ana, run.id) in ("completed", "failed"), 180, "scores")
    finally:
        live.stop()
    done = world.do(Principal.web(ana), launch.get_run, run.id)
    assert done.status == "completed", done.error
    assert done.scores["accuracy"] == 0.5
    assert not live.started_here()


def _status(world: World, user: str, run_id: str) -> str:
    time.sleep(0.3)
    return str(world.do(Principal.web(user), launch.get_run, run_id).status)
