"""Loading base models, trained checkpoints and tokenizers: safetensors or GGUF, never pickle.
A GGUF base with a cache folder is kept there dequantised, as safetensors, after its first load."""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from benchgen.training.spec import BaseWeights

LORA_WEIGHTS = "adapter_model.safetensors"
LORA_CONFIG = "adapter_config.json"
CONFIG = "config.json"
# Written last into a cached part's folder, which is then renamed into place: a part without it
# was never finished and is never read.
COMPLETE = "complete"
TOKENIZER, MODEL = "tokenizer", "model"
SPREAD = "spread"  # load_model's device: layers spread over every GPU the process sees
log = logging.getLogger(__name__)
_gguf_parsing = threading.RLock()
_GGUF_PARSERS = ("GGUFReader", "get_tensor_name_map")  # what transformers calls in gguf-py


def load_tokenizer(base: BaseWeights) -> Any:
    """The base model's tokenizer (checkpoints carry none: they share their base's).

    Raises:
        FileNotFoundError: the base's folder or file is not there.
    """
    from transformers import AutoTokenizer

    cached = kept_part(base, TOKENIZER)
    if cached is not None:
        return AutoTokenizer.from_pretrained(cached, trust_remote_code=False)
    folder, gguf_file = _location(base)
    with gguf_parsed_once(base):
        tokenizer = AutoTokenizer.from_pretrained(
            folder, gguf_file=gguf_file, trust_remote_code=False
        )
    keep_part(base, TOKENIZER, tokenizer)
    return tokenizer


def load_model(base: BaseWeights, weights_dir: str | None = None, device: str = "cpu") -> Any:
    """A causal LM in fp32: the base's weights, or a full fine-tune's from `weights_dir`, on
    `device`, or spread over every visible GPU (`SPREAD`).

    GGUF weights are dequantised to fp32 (transformers cannot train quantised GGUF tensors),
    and kept so in the base's cache folder for the next load. Remote code is never run and
    folders load only from safetensors, so nothing is unpickled.

    Raises:
        FileNotFoundError: the folder has no config.json or no safetensors weights.
        ValueError: spread, the model does not fit in the GPUs' memory.
    """
    import torch
    from transformers import AutoModelForCausalLM

    folder, gguf_file = (weights_dir, None) if weights_dir else _location(base)
    cached = None if weights_dir else kept_part(base, MODEL)
    if cached is not None:
        folder, gguf_file = cached, None
    if gguf_file is None:
        require_safetensors_folder(folder)
    options: dict[str, Any] = {"dtype": torch.float32, "trust_remote_code": False}
    options |= {"gguf_file": gguf_file} if gguf_file else {"use_safetensors": True}
    options |= {"device_map": "auto"} if device == SPREAD else {}
    with gguf_parsed_once(base) if gguf_file else nullcontext():
        model: Any = AutoModelForCausalLM.from_pretrained(folder, **options)
    if gguf_file:
        # The tensors are plain fp32 by now; the GGUF "quantizer" transformers leaves attached
        # would only make save_pretrained refuse a full fine-tune as "not serializable".
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        keep_part(base, MODEL, model)
    if device == SPREAD:
        _require_on_gpus(model)
        return model
    return model.to(device)


def _require_on_gpus(model: Any) -> None:
    """Refuse a spread model that accelerate put partly off the GPUs, on the CPU or disk (its
    weights there are `meta` in the model, lent to a GPU for each forward pass): they would
    not train."""
    elsewhere = sorted({p.device.type for p in model.parameters()} - {"cuda"})
    if elsewhere:
        raise ValueError(
            "the model does not fit in the memory of its GPUs (some of its weights are on "
            f"{', '.join(elsewhere)}): ask for more GPUs, or use lora"
        )


@contextmanager
def gguf_parsed_once(base: BaseWeights) -> Iterator[None]:
    """Within it, loading from `base`'s GGUF file parses it once and builds each tensor-name
    map once (nothing to do for other bases). transformers parses the file anew for the config,
    the tokenizer and the weights (4 s each for SmolLM2's 49k-token vocabulary, read as millions
    of numpy views) and builds the map anew for every module (397 times for SmolLM2, 13 ms
    each). Both are gguf-py's functions, swapped for remembering ones until the outermost block
    ends; other threads' GGUF loads wait for it, so none sees a file parsed before it changed
    or keeps the parses alive."""
    if base.kind != "gguf":
        yield
        return
    import gguf

    with _gguf_parsing:
        reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
        if not hasattr(reader, "cache_info"):  # the outermost block: not remembering yet
            remembering = functools.cache(reader), functools.cache(name_map)
            vars(gguf).update(zip(_GGUF_PARSERS, remembering, strict=True))
        try:
            yield
        finally:
            vars(gguf).update(zip(_GGUF_PARSERS, (reader, name_map), strict=True))


def kept_part(base: BaseWeights, part: str) -> str | None:
    """The folder holding `part` (TOKENIZER or MODEL) of a GGUF base as a load kept it, if one
    did since the file last changed."""
    entry = _entry(base)
    if entry is None or not (entry / part / COMPLETE).is_file():
        return None
    return str(entry / part)


def _entry(base: BaseWeights) -> Path | None:
    """The cache folder of this GGUF file as it is now (a changed file gets a new one)."""
    if base.kind != "gguf" or base.cache_dir is None:
        return None
    try:
        source = Path(base.path).resolve()
        stat = source.stat()
    except OSError:
        return None  # loading it says what is wrong
    stamp = f"{source}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()
    return Path(base.cache_dir) / f"{source.stem}-{hashlib.sha256(stamp).hexdigest()[:16]}"


def keep_part(base: BaseWeights, part: str, loaded: Any) -> None:
    """Save a part just read from a GGUF file (a tokenizer or model: anything with
    `save_pretrained`) into the base's cache folder: reading the GGUF file again
    (its metadata parsed in Python, every tensor dequantised) took 7.4 s for SmolLM2's tokenizer
    and model, reading the safetensors a quarter of a second. Best effort: a full disk, a
    memory limit or a folder another process filled first leaves the load as it is."""
    entry = _entry(base)
    if entry is None or (entry / part / COMPLETE).is_file():
        return
    staging: str | None = None
    try:
        entry.mkdir(parents=True, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=f".{part}-", dir=entry)
        loaded.save_pretrained(staging)
        (Path(staging) / COMPLETE).write_text(base.path)
        os.rename(staging, entry / part)  # at once, whole; fails if another process was first
        staging = None
    except Exception as exc:  # a disk, a folder or a memory limit: the load itself succeeded
        if not (entry / part / COMPLETE).is_file():  # else another process kept it first
            log.warning("could not keep the converted %s of %s: %s", part, base.path, exc)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def attach_adapter(model: Any, adapter_dir: str) -> Any:
    """The model with a LoRA checkpoint's adapter applied, for inference.

    Raises:
        FileNotFoundError: the folder lacks adapter_config.json or adapter_model.safetensors.
    """
    from peft import PeftModel

    for name in (LORA_CONFIG, LORA_WEIGHTS):
        if not (Path(adapter_dir) / name).is_file():
            raise FileNotFoundError(f"no {name} in LoRA checkpoint {adapter_dir!r}")
    return PeftModel.from_pretrained(model, adapter_dir, is_trainable=False)


def require_safetensors_folder(folder: str) -> None:
    """Refuse a folder that is not a config.json with safetensors weights beside it.

    Raises:
        FileNotFoundError: the folder, its config.json or its *.safetensors files are missing.
    """
    path = Path(folder)
    if not (path / CONFIG).is_file():
        raise FileNotFoundError(f"no {CONFIG} in {folder!r}")
    if not any(path.glob("*.safetensors")):
        raise FileNotFoundError(f"no *.safetensors weights in {folder!r}")


def _location(base: BaseWeights) -> tuple[str, str | None]:
    path = Path(base.path)
    if base.kind == "gguf":
        if not path.is_file():
            raise FileNotFoundError(f"no GGUF file at {base.path!r}")
        return str(path.parent), path.name
    if not path.is_dir():
        raise FileNotFoundError(f"no model folder at {base.path!r}")
    return str(path), None
