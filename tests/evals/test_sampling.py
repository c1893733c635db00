"""Sampling: the unbiased pass@k estimator, majority vote, the engine carrying each sample's
number, seeded baselines whose samples differ, and the generation settings each adapter sends."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchgen.evals.adapters.anthropic import AnthropicAdapter
from benchgen.evals.adapters.builtin import BuiltinAdapter
from benchgen.evals.adapters.openai_compat import OpenAICompatAdapter, sampling_fields
from benchgen.evals.engine import run_items
from benchgen.evals.prompts import compose_prompt, render_prompt
from benchgen.evals.sampling import ks_for, majority_correct, pass_at_k, summarize_samples
from benchgen.evals.types import Answer, Item, ModelSpec, Scored


def right(answer: str = "a") -> Scored:
    return Scored("correct", 1.0, answer)


def wrong(answer: str) -> Scored:
    return Scored("wrong", 0.0, answer)


def test_pass_at_k_matches_the_closed_form() -> None:
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - math.comb(3, 2) / math.comb(5, 2))
    assert pass_at_k(4, 1, 4) == 1.0  # every draw of all four holds the right one
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


@given(st.integers(1, 20).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_grows_with_k_and_pass_at_1_is_the_mean(pair: tuple[int, int]) -> None:
    n, c = pair
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(values))
    assert values[0] == pytest.approx(c / n)


def test_majority_vote_counts_answers_not_samples_and_skips_errors() -> None:
    assert majority_correct([right("7"), wrong("8"), right("7")])
    assert not majority_correct([wrong("8"), right("7"), wrong(" 8 ")])
    assert majority_correct([right("Paris"), wrong("Lyon")])  # a tie: the first seen wins
    errors = [Scored("error", 0.0, None), Scored("no_answer", 0.0, None)]
    assert not majority_correct(errors)
    assert majority_correct([*errors, right("x")])


def test_summarize_samples_reports_each_k() -> None:
    summary = summarize_samples([[right(), wrong("b"), wrong("b")], [right(), right(), right()]])
    assert summary["samples"] == 3 and summary["questions"] == 2
    assert ks_for(3) == [1, 2, 3]
    assert summary["pass_at_k"]["1"] == pytest.approx((1 / 3 + 1) / 2)
    assert summary["pass_at_k"]["3"] == 1.0
    assert summary["majority_accuracy"] == 0.5


@pytest.mark.anyio
async def test_the_engine_hands_back_each_samples_number() -> None:
    adapter = BuiltinAdapter(ModelSpec("builtin", "random", params={"seed": 3}))
    item = Item(0, "Pick one", ("a", "b", "c", "d", "e", "f"))
    work = [
        (Item(0, item.prompt, item.choices, sample), render_prompt(item)) for sample in range(8)
    ]
    got: list[Answer] = []
    await run_items(adapter, work, on_batch=got.extend)
    assert sorted(a.sample for a in got) == list(range(8))
    assert len({a.raw for a in got}) > 1, "a seeded baseline's samples should differ"
    first = next(a for a in got if a.sample == 0)
    alone = await adapter.complete(Item(0, item.prompt, item.choices), "")
    assert first.raw == alone.text  # sample 0 answers as runs did before sampling


def test_compose_prompt_puts_examples_first_and_the_chain_of_thought_last() -> None:
    example = Item(3, "2 + 2?", None)
    text = compose_prompt("Q: 3 + 3?", [(example, "4")], "step_by_step")
    assert text.index("Example 1:\n2 + 2?\nANSWER: 4") < text.index("Q: 3 + 3?")
    assert text.endswith("Think step by step first, then write the final ANSWER line.")
    assert compose_prompt("Q") == "Q"


class Captured:
    def __init__(self) -> None:
        self.payloads: list[dict[str, Any]] = []

    async def post_json(self, url: str, payload: dict[str, Any]) -> dict[str, Any]:
        self.payloads.append(payload)
        if url.endswith("/messages"):
            return {"content": [{"type": "text", "text": "ok"}]}
        return {"choices": [{"message": {"content": "ok"}}]}


SETTINGS = {
    "temperature": 0.8,
    "top_p": 0.9,
    "stop": ["END"],
    "seed": 10,
    "system_prompt": "Be brief.",
    "max_tokens": 32,
}


@pytest.mark.anyio
async def test_openai_compatible_adapter_sends_the_settings() -> None:
    spec = ModelSpec("openai_compat", "m", "https://x.example/v1", "k", SETTINGS)
    adapter = OpenAICompatAdapter(spec)
    adapter._http = Captured()  # type: ignore[assignment]
    await adapter.complete(Item(0, "q", sample=2), "q")
    sent = adapter._http.payloads[0]  # type: ignore[attr-defined]
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert (sent["temperature"], sent["top_p"], sent["stop"]) == (0.8, 0.9, ["END"])
    assert sent["seed"] == 12 and sent["max_tokens"] == 32  # the seed moves with the sample
    assert sampling_fields({"seed": 2**31 - 1}, 2)["seed"] == 1  # a signed 32-bit integer still


@pytest.mark.anyio
async def test_defaults_stay_greedy_and_anthropic_takes_a_system_field() -> None:
    plain = OpenAICompatAdapter(ModelSpec("openai_compat", "m", "https://x.example/v1", "k"))
    plain._http = Captured()  # type: ignore[assignment]
    await plain.complete(Item(0, "q"), "q")
    sent = plain._http.payloads[0]  # type: ignore[attr-defined]
    assert sent["temperature"] == 0 and "seed" not in sent and "top_p" not in sent
    assert [m["role"] for m in sent["messages"]] == ["user"]
    claude = AnthropicAdapter(ModelSpec("anthropic", "c", None, "k", {**SETTINGS, "seed": None}))
    claude._http = Captured()  # type: ignore[assignment]
    await claude.complete(Item(0, "q"), "q")
    sent = claude._http.payloads[0]  # type: ignore[attr-defined]
    assert sent["system"] == "Be brief." and sent["stop_sequences"] == ["END"]
    assert "seed" not in sent and sent["temperature"] == 0.8
