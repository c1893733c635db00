"""Loading base models, trained checkpoints and tokenizers: safetensors or GGUF, never pickle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchgen.training.spec import BaseWeights

LORA_WEIGHTS = "adapter_model.safetensors"
LORA_CONFIG = "adapter_config.json"
CONFIG = "config.json"


def load_tokenizer(base: BaseWeights) -> Any:
    """The base model's tokenizer (checkpoints carry none: they share their base's).

    Raises:
        FileNotFoundError: the base's folder or file is not there.
    """
    from transformers import AutoTokenizer

    folder, gguf_file = _location(base)
    return AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file, trust_remote_code=False)


def load_model(base: BaseWeights, weights_dir: str | None = None, device: str = "cpu") -> Any:
    """A causal LM in fp32: the base's weights, or a full fine-tune's from `weights_dir`.

    GGUF weights are dequantised to fp32 (transformers cannot train quantised GGUF tensors).
    Remote code is never run and folders load only from safetensors, so nothing is unpickled.

    Raises:
        FileNotFoundError: the folder has no config.json or no safetensors weights.
    """
    import torch
    from transformers import AutoModelForCausalLM

    folder, gguf_file = (weights_dir, None) if weights_dir else _location(base)
    if gguf_file is None:
        require_safetensors_folder(folder)
    options: dict[str, Any] = {"dtype": torch.float32, "trust_remote_code": False}
    options |= {"gguf_file": gguf_file} if gguf_file else {"use_safetensors": True}
    model: Any = AutoModelForCausalLM.from_pretrained(folder, **options)
    if gguf_file:
        # The tensors are plain fp32 by now; the GGUF "quantizer" transformers leaves attached
        # would only make save_pretrained refuse a full fine-tune as "not serializable".
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
    return model.to(device)


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
