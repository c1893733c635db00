"""A catalogue model answering a custom benchmark's task, unguarded (the worker's plan was made
by a checked function): through the per-run proxy when the bundle brings an ingestion program,
else the platform's own engine over the task's JSONL input data."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from benchgen.bundles.evaluation import (
    Environment,
    Submission,
    TaskOutcome,
    evaluate_task,
    scored_columns,
)
from benchgen.bundles.layout import ResolvedTask
from benchgen.bundles.proxy import ModelProxy, ProxyRefusal, new_proxy_key
from benchgen.evals.adapters import build_adapter
from benchgen.evals.engine import run_items
from benchgen.evals.types import Adapter, Answer, Item
from benchgen.services.runs import _replies

if TYPE_CHECKING:
    from benchgen.services.runs.bundle_execution import BundlePlan, BundleReport

T = TypeVar("T")
PROXY_PORT = 8080  # where the relay listens inside the sandbox
MAX_JSONL_ROWS = 100_000
CALL_TIMEOUT_S = 300


def evaluate_with_model(
    task: ResolvedTask, place: Path, env: Environment, plan: BundlePlan, report: BundleReport
) -> TaskOutcome:
    """Evaluate `task` with the plan's model; usage is added to `report`."""
    if task.ingestion_program is not None:
        return _through_proxy(task, place, env, plan, report)
    return _through_engine(task, place, env, plan, report)


class _ModelLoop:
    """One event loop thread owning the model's adapter, so proxy threads can share it."""

    def __init__(self, plan: BundlePlan) -> None:
        assert plan.model is not None  # only model runs reach here
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.adapter: Adapter = self.call(_build(plan))

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = CALL_TIMEOUT_S) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result(timeout=timeout)

    def close(self) -> None:
        self.call(self.adapter.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()


async def _build(plan: BundlePlan) -> Adapter:
    assert plan.model is not None  # only model runs reach here
    return build_adapter(plan.model)


def _through_proxy(
    task: ResolvedTask, place: Path, env: Environment, plan: BundlePlan, report: BundleReport
) -> TaskOutcome:
    folder = place / "proxy"
    folder.mkdir()
    socket, key = folder / "model.sock", new_proxy_key()
    models = _ModelLoop(plan)
    lock = threading.Lock()

    def forward(body: dict[str, Any]) -> dict[str, Any]:
        with lock:
            if not _affordable(plan, report):
                raise ProxyRefusal(402, "this run's credit reservation is used up")
            report.calls += 1
            index = report.calls
        prompt = _prompt(body.get("messages"))
        completion = models.call(models.adapter.complete(Item(index, prompt), prompt))
        with lock:
            report.input_tokens += completion.input_tokens
            report.output_tokens += completion.output_tokens
        return _chat_completion(
            index, completion.text, completion.input_tokens, completion.output_tokens
        )

    # The real model key stays in this process; the sandbox gets only the per-run key, which
    # dies with the proxy when the task ends.
    program_env = {
        "OPENAI_BASE_URL": f"http://127.0.0.1:{PROXY_PORT}/v1",
        "OPENAI_API_BASE": f"http://127.0.0.1:{PROXY_PORT}/v1",
        "OPENAI_API_KEY": key,
        "BENCHGEN_MODEL": "benchgen-model",
    }
    try:
        with ModelProxy(socket, key, forward, model_name="benchgen-model"):
            chosen = Submission(socket=socket, env=program_env)
            return evaluate_task(task, place, env, chosen, scored_columns(plan.leaderboard))
    finally:
        models.close()


def _affordable(plan: BundlePlan, report: BundleReport) -> bool:
    """Whether one more call stays within the run's reservation (and its call cap)."""
    if report.calls >= plan.max_calls:
        return False
    price_q, price_t = plan.prices
    tokens = report.input_tokens + report.output_tokens
    spent = report.calls * price_q + math.ceil(tokens * price_t / 1000)
    return spent + price_q <= plan.budget


def _prompt(messages: Any) -> str:
    """The conversation as one prompt for the model's adapter (a lone user message as is)."""
    if not isinstance(messages, list) or not messages:
        raise ProxyRefusal(400, "`messages` must be a non-empty list")
    parts: list[tuple[str, str]] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise ProxyRefusal(400, "each message needs a string `content`")
        parts.append((str(message.get("role", "user")), content))
    if len(parts) == 1 and parts[0][0] == "user":
        return parts[0][1]
    return "\n\n".join(f"{role.capitalize()}: {content}" for role, content in parts)


def _chat_completion(
    index: int, text: str, prompt_tokens: int, completion_tokens: int
) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "model": "benchgen-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _through_engine(
    task: ResolvedTask, place: Path, env: Environment, plan: BundlePlan, report: BundleReport
) -> TaskOutcome:
    rows = _input_rows(task.input_data)
    if not rows:
        return TaskOutcome(
            task.spec.index,
            {},
            [],
            "this task has no ingestion program and no JSONL input data for a model to answer",
            None,
        )
    rows = rows[: plan.max_calls]
    work = [(Item(i, prompt), prompt) for i, (_, prompt) in enumerate(rows)]
    answers: list[Answer] = []
    models = _ModelLoop(plan)
    assert plan.model is not None  # only model runs reach here
    # The model's key out of every error the predictions carry, as a questions run does.
    secrets = (plan.model.api_key,) if plan.model.api_key else ()
    try:
        asked = run_items(models.adapter, work, on_batch=answers.extend, secrets=secrets)
        models.call(asked, timeout=None)
    finally:
        models.close()
    report.calls += len(answers)
    report.input_tokens += sum(a.input_tokens for a in answers)
    report.output_tokens += sum(a.output_tokens for a in answers)
    results = place / "res"
    results.mkdir()
    by_index = {a.index: a for a in _replies.clip_answers(answers, plan.max_reply_chars)}
    with (results / "predictions.jsonl").open("w", encoding="utf-8") as out:
        for i, (row_id, _) in enumerate(rows):
            answer = by_index.get(i)
            record = {"id": row_id, "prediction": answer.raw if answer else None}
            if answer and answer.error:
                record["error"] = answer.error
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    chosen = Submission(results=results)
    return evaluate_task(task, place, env, chosen, scored_columns(plan.leaderboard))


def _input_rows(folder: Path | None) -> list[tuple[Any, str]]:
    """(id, prompt) for each row of the task's JSONL input files (`prompt`, `input` or
    `question` text; the row's `id`, else its position)."""
    if folder is None:
        return []
    rows: list[tuple[Any, str]] = []
    for path in sorted(folder.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip() or len(rows) >= MAX_JSONL_ROWS:
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(data, dict):
                continue
            text = next(
                (data[k] for k in ("prompt", "input", "question") if isinstance(data.get(k), str)),
                None,
            )
            if text is not None:
                rows.append((data.get("id", len(rows)), text))
    return rows
