"""LocalHFAdapter on a tiny random Llama: text, letter log-probs, LoRA and full checkpoints."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Any

import pytest

from benchgen.evals.adapters import build_adapter, local_hf
from benchgen.evals.prompts import letter_only_prompt
from benchgen.evals.types import Completion, FatalModelError, Item, ModelSpec
from tests.training.conftest import TRAIN_EXTRA, require_or_skip
from tests.training.tiny_model import build_tiny_llama

pytestmark = pytest.mark.anyio
ITEM = Item(0, "Which city is the capital of France?", ("Berlin", "Paris", "Rome", "Madrid"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The tiny base, a LoRA checkpoint on it and a full fine-tune, as the trainer writes them."""
    missing = [name for name in TRAIN_EXTRA if importlib.util.find_spec(name) is None]
    require_or_skip(
        f"needs {', '.join(missing)}: pip install 'benchgen[train]'" if missing else None
    )
    import torch
    from peft import LoraConfig, get_peft_model

    from benchgen.training.checkpoints import save_checkpoint
    from benchgen.training.spec import BaseWeights
    from benchgen.training.weights import load_model

    root = tmp_path_factory.mktemp("local-hf")
    base = BaseWeights("hf_folder", str(build_tiny_llama(root / "base")))
    torch.manual_seed(1)
    # Random (not zero) adapter weights, so the adapter visibly changes the answers.
    config = LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    save_checkpoint(get_peft_model(load_model(base), config), "lora", root / "lora", None)
    full = load_model(base)
    with torch.no_grad():
        full.lm_head.weight.add_(torch.randn_like(full.lm_head.weight))
    save_checkpoint(full, "sft", root / "sft", None)
    return {"base": base.path, "lora": str(root / "lora"), "sft": str(root / "sft")}


async def _ask(name: str, item: Item = ITEM, **params: Any) -> Completion:
    adapter = build_adapter(ModelSpec("local_hf", name, params=params))
    prompt = letter_only_prompt(item) if params.get("letter_logprobs") else item.prompt
    return await adapter.complete(item, prompt)


async def test_a_question_gets_greedy_text_with_token_counts(tiny: dict[str, str]) -> None:
    first = await _ask(tiny["base"], max_tokens=5)
    assert first.input_tokens > 5 and 0 < first.output_tokens <= 5
    assert first.letter_logprobs is None
    assert await _ask(tiny["base"], max_tokens=5) == first  # greedy: the same every time


async def test_multiple_choice_returns_the_letters_log_probs(tiny: dict[str, str]) -> None:
    reply = await _ask(tiny["base"], letter_logprobs=True)
    logprobs = reply.letter_logprobs
    assert logprobs is not None and set(logprobs) == set("ABCD")
    assert all(value <= 0 for value in logprobs.values())
    assert reply.text == max(logprobs, key=logprobs.__getitem__) and reply.output_tokens == 1


async def test_lora_and_full_checkpoints_change_the_answers(tiny: dict[str, str]) -> None:
    base = await _ask(tiny["base"], letter_logprobs=True)
    lora = await _ask(tiny["base"], letter_logprobs=True, adapter_dir=tiny["lora"])
    full = await _ask(tiny["base"], letter_logprobs=True, weights_dir=tiny["sft"])
    assert base.letter_logprobs and lora.letter_logprobs and full.letter_logprobs
    assert lora.letter_logprobs != pytest.approx(base.letter_logprobs)
    assert full.letter_logprobs != pytest.approx(base.letter_logprobs)


async def test_a_model_is_loaded_once_per_base_and_checkpoint(tiny: dict[str, str]) -> None:
    await _ask(tiny["base"], max_tokens=1, adapter_dir=tiny["lora"])
    loaded = dict(local_hf._loaded)
    await _ask(tiny["base"], max_tokens=1, adapter_dir=tiny["lora"], letter_logprobs=True)
    assert dict(local_hf._loaded).keys() == loaded.keys()
    assert all(local_hf._loaded[key] is model for key, model in loaded.items())


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("{tmp}/nothing", {}, "config.json"),
        ("{tmp}/missing.gguf", {}, "no GGUF"),
        ("{base}", {"adapter_dir": "{tmp}"}, "adapter_config.json"),
        ("{base}", {"weights_dir": "{tmp}"}, "safetensors"),
        ("{base}", {"adapter_dir": "{lora}", "weights_dir": "{sft}"}, "not both"),
    ],
)
def test_missing_or_conflicting_files_are_fatal(
    tiny: dict[str, str], tmp_path: Path, name: str, params: dict[str, str], message: str
) -> None:
    places = tiny | {"tmp": str(tmp_path)}
    spec = ModelSpec(
        "local_hf", name.format(**places), params={k: v.format(**places) for k, v in params.items()}
    )
    with pytest.raises(FatalModelError, match=message):
        build_adapter(spec)


def test_without_the_train_extra_the_install_command_is_named(
    tiny: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "peft" else real(name, *a)
    )
    with pytest.raises(FatalModelError, match=r"peft: pip install 'benchgen\[train\]'"):
        build_adapter(ModelSpec("local_hf", tiny["base"]))


async def test_loading_and_answering_print_no_library_noise(
    tiny: dict[str, str], capfd: pytest.CaptureFixture[str]
) -> None:
    local_hf._loaded.clear()  # load again, where the progress bar and warnings came from
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        await _ask(tiny["base"], max_tokens=2, adapter_dir=tiny["lora"])
        await _ask(tiny["base"], max_tokens=2, weights_dir=tiny["sft"])
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == "", printed
    assert [str(w.message) for w in warned] == []


async def test_generation_stops_at_the_models_context(tiny: dict[str, str]) -> None:
    # The tiny model's context is 256 tokens: a reply never runs past it, whatever max_tokens says.
    reply = await _ask(tiny["base"], max_tokens=1000, temperature=1.0, seed=3)
    assert reply.input_tokens + reply.output_tokens <= 256
