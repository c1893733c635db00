"""Hugging Face causal LMs run in-process by transformers (the train extra): bases or trained."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchgen.evals.adapters.openai_compat import chat_messages, sampling_fields
from benchgen.evals.prompts import LABELS
from benchgen.evals.types import Completion, FatalModelError, Item, ModelSpec, local_threads
from benchgen.training import records, weights
from benchgen.training.spec import BaseWeights

INSTALL_HINT = "pip install 'benchgen[train]'"
# The param naming where a GGUF base is kept converted (BaseWeights.cache_dir); the platform sets
# it for Trained models, over anything in their own params.
CACHE_PARAM = "weights_cache_dir"
DEFAULT_MAX_TOKENS = 512
_SAMPLING_TOP_K = 40
# fp32 copies are large (4 bytes a weight): keep the most recently used few, not every one.
_MAX_LOADED = 2


@dataclass(frozen=True)
class _Key:
    base: str  # a folder, or a .gguf file
    adapter_dir: str | None
    weights_dir: str | None
    cache_dir: str | None


@dataclass
class _Loaded:
    model: Any
    tokenizer: Any
    # torch runs one forward pass at a time well; concurrent ones only fight over the cores.
    lock: threading.Lock = field(default_factory=threading.Lock)
    letter_ids: dict[str, list[int]] | None = None  # filled on the first multiple-choice call


_loaded: OrderedDict[_Key, _Loaded] = OrderedDict()
_loaded_lock = threading.Lock()


class LocalHFAdapter:
    """Runs a base model, a LoRA checkpoint on it, or a full fine-tune, one call at a time.

    `spec.name` is the base's weights: a folder (config.json + safetensors) or a `.gguf` file.
    Params: `adapter_dir` (a LoRA checkpoint folder) or `weights_dir` (a full fine-tune's
    folder; the tokenizer stays the base's), `weights_cache_dir` (where a GGUF base is kept
    converted, see training.weights), `max_tokens` (512), `threads` (2),
    `letter_logprobs` (multiple choice by the next token's log-probs of the valid letters,
    for a letter-only prompt), and a run's `temperature`, `top_p`, `stop`, `seed` and
    `system_prompt`. Greedy unless `temperature` > 0.
    """

    max_in_flight = 1  # calls take turns on `_turn`

    def __init__(self, spec: ModelSpec) -> None:
        self._key = _key(spec)
        self._max_tokens = int(spec.params.get("max_tokens", DEFAULT_MAX_TOKENS))
        self._letter_logprobs = bool(spec.params.get("letter_logprobs", False))
        self._threads = local_threads(spec)
        self._params = spec.params
        # Queue callers here rather than in worker threads, so waiting costs no thread.
        self._turn = asyncio.Lock()

    async def complete(self, item: Item, prompt: str) -> Completion:
        """Answer in a worker thread, loading the model on first use."""
        labels = LABELS[: len(item.choices)] if self._letter_logprobs and item.choices else None
        messages = chat_messages(self._params, prompt)
        async with self._turn:
            return await asyncio.to_thread(self._answer, messages, labels, item.sample)

    async def aclose(self) -> None:
        """Keep the model loaded: other runs in this process reuse it."""

    def _answer(
        self, messages: list[dict[str, str]], labels: str | None, sample: int
    ) -> Completion:
        import torch

        loaded = _load(self._key)
        with loaded.lock, torch.inference_mode():
            torch.set_num_threads(self._threads)
            text = records.render_chat(loaded.tokenizer, messages, add_generation_prompt=True)
            ids = loaded.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
            if labels:
                return _letters(loaded, ids, labels)
            return self._generate(loaded, ids, sample)

    def _generate(self, loaded: _Loaded, ids: Any, sample: int) -> Completion:
        import torch

        tokenizer = loaded.tokenizer
        fields = sampling_fields(self._params, sample)
        pad = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        )
        # Past the model's context its positions mean nothing: the reply stops there, not at
        # max_tokens (transformers would only warn and go on producing noise, slowly).
        context = int(getattr(loaded.model.config, "max_position_embeddings", 0) or 0)
        room = context - int(ids.shape[1]) if context else self._max_tokens
        if room < 1:
            raise FatalModelError(
                f"the prompt ({int(ids.shape[1])} tokens) fills the model's context ({context})"
            )
        options: dict[str, Any] = {
            "max_new_tokens": min(self._max_tokens, room),
            "do_sample": False,
        }
        temperature = float(self._params.get("temperature") or 0)
        if temperature > 0:
            options |= {"do_sample": True, "temperature": temperature, "top_k": _SAMPLING_TOP_K}
            options["top_p"] = float(fields.get("top_p", 1.0))
            if "seed" in fields:
                torch.manual_seed(fields["seed"])
        stops: list[str] = fields.get("stop", [])
        if stops:
            options |= {"stop_strings": stops, "tokenizer": tokenizer}
        mask = torch.ones_like(ids)
        with _quiet():
            output = loaded.model.generate(
                input_ids=ids, attention_mask=mask, pad_token_id=pad, **options
            )
        new = output[0, ids.shape[1] :]
        reply = str(tokenizer.decode(new, skip_special_tokens=True))
        for stop in stops:  # generation halts after a stop string; the reply ends before it
            reply = reply.split(stop, 1)[0]
        return Completion(reply, input_tokens=int(ids.shape[1]), output_tokens=int(new.shape[0]))


def _key(spec: ModelSpec) -> _Key:
    missing = [
        name for name in ("torch", "transformers", "peft") if importlib.util.find_spec(name) is None
    ]
    if missing:
        raise FatalModelError(
            f"local Hugging Face models need {', '.join(missing)}: {INSTALL_HINT}"
        )
    adapter_dir = spec.params.get("adapter_dir")
    weights_dir = spec.params.get("weights_dir")
    if adapter_dir and weights_dir:
        raise FatalModelError("give adapter_dir (LoRA) or weights_dir (full fine-tune), not both")
    cache_dir = spec.params.get(CACHE_PARAM)
    return _Key(
        _base(spec.name),
        _adapter_dir(str(adapter_dir)) if adapter_dir else None,
        _weights_dir(str(weights_dir)) if weights_dir else None,
        str(cache_dir) if cache_dir else None,
    )


def _base(name: str) -> str:
    path = Path(name)
    if name.endswith(".gguf"):
        if not path.is_file():
            raise FatalModelError(f"no GGUF model file at {name!r}")
        if importlib.util.find_spec("gguf") is None:
            raise FatalModelError(f"GGUF models in transformers need gguf: {INSTALL_HINT}")
        return str(path.resolve())
    return _weights_dir(name)


def _weights_dir(folder: str) -> str:
    path = Path(folder)
    if not (path / "config.json").is_file() or not any(path.glob("*.safetensors")):
        raise FatalModelError(f"no config.json with *.safetensors weights in {folder!r}")
    return str(path.resolve())


def _adapter_dir(folder: str) -> str:
    for name in (weights.LORA_CONFIG, weights.LORA_WEIGHTS):
        if not (Path(folder) / name).is_file():
            raise FatalModelError(f"no {name} in LoRA checkpoint {folder!r}")
    return str(Path(folder).resolve())


def _load(key: _Key) -> _Loaded:
    with _loaded_lock:
        loaded = _loaded.get(key)
        if loaded is None:
            loaded = _loaded[key] = _build(key)
            while len(_loaded) > _MAX_LOADED:
                _loaded.popitem(last=False)  # a call still using it keeps its own reference
        _loaded.move_to_end(key)
        return loaded


def _build(key: _Key) -> _Loaded:
    if key.base.endswith(".gguf"):
        base = BaseWeights("gguf", key.base, key.cache_dir)
    else:
        base = BaseWeights("hf_folder", key.base)
    try:
        # As the trainer loads them (fp32, so a LoRA adapter sees the weights it was fitted to):
        # never the model's own code, and folders only from safetensors, so nothing is unpickled.
        with _quiet():
            with weights.gguf_parsed_once(base):  # tokenizer and model from one parse
                tokenizer = weights.load_tokenizer(base)
                model = weights.load_model(base, key.weights_dir)
            if key.adapter_dir:
                model = weights.attach_adapter(model, key.adapter_dir)
    except Exception as exc:  # a model that cannot load now will not load on a retry either
        raise FatalModelError(f"cannot load local model {key.base!r}: {_why(exc)}") from None
    model.eval()
    return _Loaded(model, tokenizer)


def _why(exc: Exception) -> str:
    # A KeyError says only the key ('added_tokens', from a damaged tokenizer.json): name it as
    # one, and where to look.
    if isinstance(exc, KeyError) or not str(exc):
        return (
            f"{type(exc).__name__} {exc} while reading its files: check its config.json and "
            "tokenizer files against the model's published ones"
        )
    return str(exc)


@contextmanager
def _quiet() -> Iterator[None]:
    """Keep transformers' progress bars, notices and deprecation warnings off the terminal: a
    run's progress is BenchGen's to show, and a model that cannot load says why as an error."""
    from transformers.utils import logging as untyped

    hf_logging: Any = untyped  # transformers leaves these functions unannotated
    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def _letters(loaded: _Loaded, ids: Any, labels: str) -> Completion:
    """Best next-token log-prob per valid letter, over every token that reads as the letter."""
    import torch

    logits = loaded.model(input_ids=ids).logits[0, -1]
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    if loaded.letter_ids is None:
        loaded.letter_ids = _letter_ids(loaded.tokenizer)
    best = {
        letter: max(float(logprobs[i]) for i in loaded.letter_ids[letter])
        for letter in labels
        if loaded.letter_ids.get(letter)
    }
    text = max(best, key=best.__getitem__) if best else ""
    return Completion(text, input_tokens=int(ids.shape[1]), output_tokens=1, letter_logprobs=best)


def _letter_ids(tokenizer: Any) -> dict[str, list[int]]:
    """The ids of the tokens that decode to "A".."Z", with or without a leading space."""
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    found: dict[str, list[int]] = {}
    for token_id, text in enumerate(texts):
        letter = text[1:] if text.startswith(" ") else text
        if len(letter) == 1 and letter in LABELS:
            found.setdefault(letter, []).append(token_id)
    return found
