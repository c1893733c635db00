"""A run's token totals hold what a long run sums to, on both databases."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.db.tables import Run
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime
from tests.support import MCQ, World


@pytest.mark.both_backends  # PostgreSQL's INTEGER holds 32 bits, SQLite's 64
def test_a_runs_token_totals_hold_more_than_32_bits(world: World, runtime: Runtime) -> None:
    ana = world.user("ana@example.com")
    benchmark = world.benchmark(ana, MCQ)
    run_id = world.do(Principal.web(ana), launch.start_run, benchmark, "mdl_builtin_first").id
    # 10,000 questions of 20 samples of 15,000 tokens: 3e9, past 2**31 - 1.
    total = 10_000 * 20 * 15_000
    with runtime.database.session() as session, session.begin():
        run = session.get(Run, run_id)
        assert run is not None
        run.input_tokens = run.output_tokens = total
        run.judge_input_tokens = run.judge_output_tokens = total
    with runtime.database.session(write=False) as session:
        run = session.get(Run, run_id)
        assert run is not None
        assert (run.input_tokens, run.output_tokens) == (total, total)
        assert (run.judge_input_tokens, run.judge_output_tokens) == (total, total)
