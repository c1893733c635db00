"""Checkpoint folders written atomically: safetensors weights, optimizer tensors, JSON state."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from peft import get_peft_model_state_dict, set_peft_model_state_dict
from safetensors.torch import load_file, save_file

from benchgen.training.batches import Position
from benchgen.training.spec import JobType
from benchgen.training.weights import LORA_WEIGHTS

OPTIMIZER_FILE = "optimizer.safetensors"
STATE_FILE = "state.json"
FINAL = "final"
FORMAT = 1


@dataclass(frozen=True)
class TrainState:
    """What a resumed attempt needs besides the weights and the optimizer's tensors."""

    step: int  # optimizer steps done
    position: Position  # where the data order stands after that step
    total_steps: int
    base_lr: float  # the learning rate decays linearly from this to 0 at total_steps
    seed: int  # with the step, seeds the data order and each step's dropout


def step_dir(output_dir: str, step: int) -> Path:
    """The folder of the checkpoint taken after `step` steps."""
    return Path(output_dir) / f"step-{step:06d}"


def save_checkpoint(
    model: Any, job_type: JobType, target: Path, state: TrainState | None, optimizer: Any = None
) -> Path:
    """Write weights (and, for a resumable checkpoint, the optimizer and state) to `target`.

    Everything goes to a hidden folder first, renamed into place at the end, so a folder
    named `step-…` or `final` is always whole, even when the process dies while writing.
    """
    staging = target.with_name(f".{target.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    _save_weights(model, job_type, staging)
    if state is not None and optimizer is not None:
        tensors, meta = _flatten(optimizer.state_dict())
        save_file(tensors, str(staging / OPTIMIZER_FILE))
        record = asdict(state) | {"format": FORMAT, "job_type": job_type, "optimizer": meta}
        (staging / STATE_FILE).write_text(json.dumps(record, indent=2), encoding="utf-8")
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    return target


def load_state(folder: str, job_type: JobType, optimizer: Any) -> TrainState:
    """Restore the optimizer from a checkpoint and return where that attempt stood.

    Raises:
        ValueError: the folder is not a resumable checkpoint of this job type.
    """
    path = Path(folder)
    if not (path / STATE_FILE).is_file() or not (path / OPTIMIZER_FILE).is_file():
        raise ValueError(f"{folder!r} is not a resumable checkpoint (no state or optimizer file)")
    record = json.loads((path / STATE_FILE).read_text(encoding="utf-8"))
    if record.get("format") != FORMAT or record.get("job_type") != job_type:
        raise ValueError(f"{folder!r} is a checkpoint of another format or job type")
    # On the CPU: load_state_dict moves each tensor to its parameter's device itself.
    tensors = load_file(str(path / OPTIMIZER_FILE))
    optimizer.load_state_dict(_unflatten(tensors, record["optimizer"]))
    return TrainState(
        step=int(record["step"]),
        position=Position(**record["position"]),
        total_steps=int(record["total_steps"]),
        base_lr=float(record["base_lr"]),
        seed=int(record["seed"]),
    )


def load_lora_weights(model: Any, folder: str) -> None:
    """Put a LoRA checkpoint's adapter weights into a freshly wrapped peft model."""
    set_peft_model_state_dict(model, load_file(str(Path(folder) / LORA_WEIGHTS)))


def _save_weights(model: Any, job_type: JobType, folder: Path) -> None:
    if job_type == "lora":
        weights = {
            k: v.detach().cpu().contiguous() for k, v in get_peft_model_state_dict(model).items()
        }
        save_file(weights, str(folder / LORA_WEIGHTS), metadata={"format": "pt"})
        model.peft_config["default"].save_pretrained(str(folder))  # adapter_config.json
    else:
        model.save_pretrained(str(folder))  # config.json, generation_config.json, model.safetensors


def _flatten(state_dict: dict[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The optimizer's tensors by name ("state.3.exp_avg"); its other values as JSON."""
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, Any] = {}
    for index, entries in state_dict["state"].items():
        for name, value in entries.items():
            if isinstance(value, torch.Tensor):
                tensors[f"state.{index}.{name}"] = value.detach().cpu().contiguous()
            else:
                scalars[f"state.{index}.{name}"] = value
    return tensors, {"param_groups": state_dict["param_groups"], "scalars": scalars}


def _unflatten(tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for key, value in [*tensors.items(), *meta["scalars"].items()]:
        _, index, name = key.split(".", 2)
        state.setdefault(int(index), {})[name] = value
    return {"state": state, "param_groups": meta["param_groups"]}
