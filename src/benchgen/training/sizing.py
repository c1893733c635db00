"""What a base model is and how much memory training it takes, read without importing torch."""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchgen.training.gguf_header import ArrayValue, GGUFHeader, GGUFHeaderError, read_header
from benchgen.training.spec import BaseWeights, Hyperparameters, JobType

# Decoder-only architectures transformers builds from its own code (tests check each is in its
# causal-LM mapping). A config naming another one would need remote code or cannot train here.
CAUSAL_LM_TYPES = frozenset(
    {
        "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "phi", "phi3",
        "gemma", "gemma2", "gemma3_text", "granite", "olmo", "olmo2", "smollm3", "starcoder2",
        "stablelm", "gpt2", "gpt_neox", "falcon", "cohere", "nemotron", "bloom", "opt", "gptj",
    }
)  # fmt: skip
# Architectures with one learned embedding per position: a row longer than their context fails
# training (an index past those embeddings), where rotary and ALiBi models go on.
LEARNED_POSITIONS = frozenset({"gpt2", "opt"})
# What transformers builds a tokenizer from: a fast tokenizer's file, a SentencePiece or tiktoken
# model, or a BPE or WordPiece vocabulary (Mistral's tekken.json too).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer.model",
    "spiece.model",
    "vocab.json",
    "vocab.txt",
    "tekken.json",
)
# Other files transformers reads beside them when they are there.
TOKENIZER_EXTRAS = (
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "merges.txt",
    "chat_template.jinja",
    "chat_template.json",
)
# The largest published tokenizer files hold tens of megabytes (Gemma 3's tokenizer.json: 33).
MAX_TOKENIZER_BYTES = 256 * 2**20
# GGUF architectures transformers can dequantise into a model, and the model type each becomes
# (transformers' GGUF_SUPPORTED_ARCHITECTURES, less the encoder-decoder and state-space ones).
GGUF_TYPES = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen2moe": "qwen2_moe",
    "qwen3": "qwen3",
    "qwen3moe": "qwen3_moe",
    "phi3": "phi3",
    "gemma2": "gemma2",
    "gemma3": "gemma3_text",
    "falcon": "falcon",
    "bloom": "bloom",
    "stablelm": "stablelm",
    "gpt2": "gpt2",
    "starcoder2": "starcoder2",
    "nemotron": "nemotron",
}

# How transformers names a llama-style GGUF file's layer matrices (its GGUF tensor-name map).
_GGUF_LLAMA_STYLE = frozenset({"llama", "mistral", "qwen2", "qwen3"})
_GGUF_LAYER_MODULES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_LM_HEAD = "lm_head"

MIB = 2**20
RUNTIME_BYTES = 640 * MIB  # Python, torch, transformers and peft loaded, before any weight
_FP32 = 4
# Per trainable value: the weight, its gradient, AdamW's two moments, and the temporaries of
# AdamW's multi-tensor (foreach) step, about one more copy (a full fine-tune peaks there).
_ADAMW_FP32_COPIES = 5
_ACTIVATION_FLOATS_PER_HIDDEN = 24  # floats kept for backward per token, layer and hidden unit
_LOGIT_COPIES = 4  # logits, their fp32 softmax, and the gradients of both
_SLACK = 1.25  # the allocator's caching and fragmentation on top of the tensors themselves
# The safetensors format allows a JSON header of up to 100 MB; real ones hold one short entry
# per tensor, kilobytes to a few MB even for large mixtures of experts.
MAX_HEADER_BYTES = 16 * MIB
MAX_CONFIG_BYTES = 16 * MIB  # a config.json: real ones hold kilobytes
# What reading damaged files can raise beyond the checks made on the way (int("abc") for a
# config value, a GGUF reader meeting garbage).
_DAMAGED = (OSError, ValueError, TypeError, KeyError, IndexError, OverflowError, struct.error)


@dataclass(frozen=True)
class BaseInfo:
    """A base model's shape as read from its files, and whether this platform can train it."""

    model_type: str
    param_count: int
    hidden_size: int
    layers: int
    trainable: bool
    reason: str  # why not, when not trainable; "" otherwise
    vocab_size: int = 0
    intermediate_size: int = 0
    heads: int = 0
    context_length: int = 0
    dequantised: bool = False  # GGUF: weights arrive quantised and are expanded to fp32 at load
    # The model's matrices (Linear and Embedding layers) by their transformers module names, as
    # LoRA's target_modules are matched against; empty when they cannot be read cheaply.
    modules: frozenset[str] = frozenset()


def matches_module(target: str, modules: frozenset[str]) -> bool:
    """Whether a LoRA target_modules entry names a module, as peft matches them (whole name, or
    its last dotted parts)."""
    return any(name == target or name.endswith("." + target) for name in modules)


def describe_base(base: BaseWeights) -> BaseInfo:
    """Read a base model's config (a folder) or metadata (a GGUF file) and judge it.

    A folder is refused when its weights are not safetensors, when its config asks for remote
    code (`auto_map`), or when transformers has no built-in causal LM of its type; a GGUF file
    when transformers cannot dequantise its architecture. Never raises for a bad model: the
    answer is `trainable=False` with the reason.
    """
    try:
        return (
            _describe_gguf(Path(base.path))
            if base.kind == "gguf"
            else _describe_folder(Path(base.path))
        )
    except _Refused as refused:
        return _not_trainable(str(refused))
    except _DAMAGED as exc:
        # The operator's files are read for every user's catalogue: a damaged one (a config
        # value that is no number, a GGUF file the reader chokes on) must make that one model
        # untrainable, never the whole catalogue an error.
        return _not_trainable(f"its files could not be read ({type(exc).__name__}: {exc})")


def unreadable_folder(folder: Path) -> str:
    """Why a Hugging Face folder's config.json or safetensors headers cannot be read, or it
    has no tokenizer, or "": a cheap check (no tensor is read) before an operator registers
    it."""
    try:
        _read_json(folder / "config.json")
        _safetensors_header(folder)
    except _Refused as refused:
        return str(refused)
    return _tokenizer_refusal(folder)


def unreadable_gguf(path: Path) -> str:
    """Why a GGUF file's header cannot be read, or "": a cheap check (no tensor is read) before
    an operator registers it."""
    try:
        _gguf_header(path)
    except _Refused as refused:
        return str(refused)
    return ""


def estimate_peak_bytes(info: BaseInfo, job_type: JobType, hyper: Hyperparameters) -> int:
    """A deliberately high estimate of a job's peak memory on the CPU, in bytes.

    The runtime (RUNTIME_BYTES) and the fp32 weights, plus the larger of two phases. Loading:
    a GGUF file's whole dequantised copy beside the model (a folder's: a tenth of the weights).
    Training, with a quarter more for the allocator: per trainable value (sft: all; lora: the
    adapters') a gradient, AdamW's two moments and its step's temporaries; and activations for
    a full batch of max_seq_length tokens: ~24 floats per token, layer and hidden unit kept for
    backward, and four copies of the logits over the vocabulary. No seq² term: transformers'
    default attention (sdpa) keeps no score matrix. Shorter rows only make it higher.

    Measured peak RSS against it (run_training, SmolLM2-135M GGUF, rows filling the length),
    batch × length: lora 1×128 1291 MiB (estimate 1666, +29%), 4×128 2110 (2665, +26%),
    1×512 2113 (2665, +26%), 4×512 5479 (7142, +30%); sft 1×64 3016 (3905, +29%), 1×128 2955
    (4092, +38%), 2×256 3378 (5211, +54%). The child's limit is RLIMIT_DATA (private writable
    memory), which tracked RSS within 10%; tests/training/test_smollm2.py trains under it.
    """
    weights = info.param_count * _FP32
    loading = weights if info.dequantised else weights // 10
    trainable = info.param_count if job_type == "sft" else _lora_params(info, hyper)
    state = trainable * _FP32 * (_ADAMW_FP32_COPIES - 1)
    tokens = hyper.batch_size * hyper.max_seq_length
    per_layer = tokens * info.hidden_size * _ACTIVATION_FLOATS_PER_HIDDEN * info.layers
    logits = tokens * info.vocab_size * _LOGIT_COPIES
    training = math.ceil(_SLACK * (state + (per_layer + logits) * _FP32))
    return RUNTIME_BYTES + weights + max(loading, training)


def _lora_params(info: BaseInfo, hyper: Hyperparameters) -> int:
    # Each adapted matrix gains r·(inputs + outputs); the widest a projection can be is the
    # MLP's, so every target is counted at that width.
    widest = max(info.hidden_size, info.intermediate_size)
    return hyper.lora_rank * (info.hidden_size + widest) * info.layers * len(hyper.target_modules)


class _Refused(Exception):
    """The files are not a model this platform trains; the message says why."""


def _describe_folder(folder: Path) -> BaseInfo:
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise _Refused(f"no config.json in {str(folder)!r}")
    config = _read_json(config_path)
    model_type = str(config.get("model_type", ""))
    params, modules = _safetensors_header(folder)
    nested = config.get("text_config")  # multimodal configs keep the language model's here
    text: dict[str, Any] = nested if isinstance(nested, dict) else config
    info = BaseInfo(
        model_type=model_type,
        param_count=params,
        hidden_size=int(text.get("hidden_size") or text.get("n_embd") or 0),
        layers=int(text.get("num_hidden_layers") or text.get("n_layer") or 0),
        trainable=True,
        reason="",
        vocab_size=int(text.get("vocab_size") or 0),
        intermediate_size=int(text.get("intermediate_size") or 0),
        heads=int(text.get("num_attention_heads") or text.get("n_head") or 0),
        context_length=int(text.get("max_position_embeddings") or text.get("n_positions") or 0),
        modules=modules,
    )
    reason = _folder_refusal(folder, config, model_type, params)
    return _refuse(info, reason) if reason else info


def _folder_refusal(folder: Path, config: dict[str, Any], model_type: str, params: int) -> str:
    if "auto_map" in config:
        return "its config.json asks for remote code (auto_map), which is never run"
    if model_type not in CAUSAL_LM_TYPES:
        return (
            f"model type {model_type!r} is not a causal LM transformers builds without remote code"
        )
    if params == 0:
        return "it has no *.safetensors weights (pickled .bin weights are never loaded)"
    return _tokenizer_refusal(folder)


def _tokenizer_refusal(folder: Path) -> str:
    """Why the folder holds no tokenizer transformers could load, or "": without one a job
    fails once queued, and a run at its first question."""
    for name in (*TOKENIZER_FILES, *TOKENIZER_EXTRAS):
        path = folder / name
        # transformers reads these whole (a pipe: for ever) in the worker that loads the model.
        if path.exists() and not path.is_file():
            return f"its {name} is not a regular file"
        if path.is_file() and path.stat().st_size > MAX_TOKENIZER_BYTES:
            return f"its {name} is larger than {MAX_TOKENIZER_BYTES // MIB} MiB"
    if any((folder / name).is_file() for name in TOKENIZER_FILES):
        return ""
    return (
        f"it has no tokenizer (none of {', '.join(TOKENIZER_FILES)}): copy the model's "
        "tokenizer files beside its weights"
    )


def _safetensors_header(folder: Path) -> tuple[int, frozenset[str]]:
    """Values in every *.safetensors file, and its matrices' module names, from their JSON
    headers (no tensor is read)."""
    total = 0
    modules = {_LM_HEAD}  # tied embeddings store no lm_head, yet the model has one
    for path in sorted(folder.glob("*.safetensors")):
        for name, shape in _tensor_shapes(path).items():
            total += math.prod(shape)
            if name.endswith(".weight") and len(shape) == 2:
                modules.add(name.removesuffix(".weight"))
    return total, frozenset(modules)


def _tensor_shapes(path: Path) -> dict[str, list[int]]:
    """Each tensor's shape in a safetensors file's header, checked before anything trusts it."""
    shapes = {}
    for name, tensor in _header(path).items():
        if name == "__metadata__":
            continue
        shape = tensor.get("shape") if isinstance(tensor, dict) else None
        if not (isinstance(shape, list) and all(_is_size(n) for n in shape)):
            raise _unreadable(path, f"tensor {name!r} has no valid shape")
        shapes[name] = shape
    return shapes


def _header(path: Path) -> dict[str, Any]:
    """A safetensors file's JSON header: an 8-byte little-endian length, then that many bytes.

    The length is the file's own claim: checked against the file's size and MAX_HEADER_BYTES
    before reading, since a damaged or truncated file would otherwise have the server allocate
    whatever it says (garbage reads as about 10^17 bytes) on every catalogue request.
    """
    if not path.is_file():
        # A pipe or device named *.safetensors: opening a pipe waits for a writer for ever,
        # and this runs in every catalogue request.
        raise _unreadable(path, "not a regular file")
    try:
        with path.open("rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            prefix = stream.read(8)
            if len(prefix) < 8:
                raise _unreadable(path, f"{size} bytes is too short for a safetensors file")
            (length,) = struct.unpack("<Q", prefix)
            if length > min(size - 8, MAX_HEADER_BYTES):
                raise _unreadable(
                    path, f"its header claims {length} bytes, more than the file or the limit"
                )
            header = json.loads(stream.read(length))
    except OSError as exc:
        raise _unreadable(path, exc.strerror or str(exc)) from None
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser
        raise _unreadable(path, "its header is not JSON") from None
    if not isinstance(header, dict):
        raise _unreadable(path, "its header is not a JSON object")
    return header


def _is_size(value: object) -> bool:
    # bool is an int to Python, but `true` is no dimension.
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _unreadable(path: Path, detail: str) -> _Refused:
    return _Refused(f"its weights could not be read ({path.name}: {detail})")


def _gguf_modules(arch: str, tensor_names: list[str]) -> frozenset[str]:
    """The transformers module names of a llama-style GGUF file's matrices; empty for others."""
    if arch not in _GGUF_LLAMA_STYLE:
        return frozenset()
    modules = {_LM_HEAD, "model.embed_tokens"}
    for name in tensor_names:
        parts = name.split(".")
        if len(parts) == 4 and parts[0] == "blk" and parts[2] in _GGUF_LAYER_MODULES:
            modules.add(f"model.layers.{parts[1]}.{_GGUF_LAYER_MODULES[parts[2]]}")
    return frozenset(modules)


def _gguf_header(path: Path) -> GGUFHeader:
    try:
        # Not gguf-py's reader: it trusts the lengths a file claims (and took 4 s over
        # SmolLM2's vocabulary), and this runs for every user's catalogue.
        return read_header(path)
    except (GGUFHeaderError, OSError) as exc:
        raise _Refused(f"not a readable GGUF file: {exc}") from None


def _describe_gguf(path: Path) -> BaseInfo:
    if not path.is_file():
        raise _Refused(f"no GGUF file at {str(path)!r}")
    header = _gguf_header(path)
    fields = header.fields
    arch = str(fields.get("general.architecture") or "")
    name = str(fields.get("general.name") or "").lower()
    model_type = "mistral" if arch == "llama" and "mistral" in name else GGUF_TYPES.get(arch, arch)
    tokens = fields.get("tokenizer.ggml.tokens")
    info = BaseInfo(
        model_type=model_type,
        param_count=sum(t.n_elements for t in header.tensors),
        hidden_size=_gguf_int(fields, f"{arch}.embedding_length"),
        layers=_gguf_int(fields, f"{arch}.block_count"),
        trainable=True,
        reason="",
        vocab_size=tokens.length if isinstance(tokens, ArrayValue) else 0,
        intermediate_size=_gguf_int(fields, f"{arch}.feed_forward_length"),
        heads=_gguf_int(fields, f"{arch}.attention.head_count"),
        context_length=_gguf_int(fields, f"{arch}.context_length"),
        dequantised=True,
        modules=_gguf_modules(arch, [t.name for t in header.tensors]),
    )
    if arch not in GGUF_TYPES:
        return _refuse(info, f"transformers cannot load GGUF architecture {arch!r}")
    return info


def _gguf_int(fields: dict[str, object], key: str) -> int:
    value = fields.get(key)
    # A count stored as text or an array is no count: read as 0, as a missing one is.
    return int(value) if isinstance(value, int | float) else 0


def _not_trainable(reason: str) -> BaseInfo:
    return BaseInfo("", 0, 0, 0, trainable=False, reason=reason)


def _refuse(info: BaseInfo, reason: str) -> BaseInfo:
    return BaseInfo(**{**info.__dict__, "trainable": False, "reason": reason})


def _read_json(path: Path) -> dict[str, Any]:
    try:
        # A config holds kilobytes; a huge file would be read whole in a catalogue request.
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise _Refused(f"{path.name} is larger than {MAX_CONFIG_BYTES // MIB} MiB")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError, RecursionError) as exc:
        raise _Refused(f"cannot read {path.name}: {exc}") from None
    if not isinstance(data, dict):
        raise _Refused(f"{path.name} is not a JSON object")
    return data
