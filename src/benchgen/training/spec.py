"""What a training job is: plain, JSON-round-tripped values the server and the child share."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Literal

JobType = Literal["lora", "sft"]
Device = Literal["cpu", "cuda"]


@dataclass(frozen=True)
class BaseWeights:
    """Where a base model's weights lie on this machine (registered by the operator)."""

    kind: Literal["hf_folder", "gguf"]
    path: str  # a folder with config.json + *.safetensors, or a .gguf file
    # Where a GGUF base is kept dequantised, as safetensors, once it has been loaded: later loads
    # skip reading the GGUF file (see weights.py). None: every load reads the GGUF file.
    cache_dir: str | None = None


@dataclass(frozen=True)
class Hyperparameters:
    """The knobs a user sets; the LoRA ones are ignored by full fine-tuning (sft)."""

    epochs: int = 1
    learning_rate: float = 2e-4
    batch_size: int = 4
    max_seq_length: int = 512
    lora_rank: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    target_modules: tuple[str, ...] = ("q_proj", "v_proj")
    max_grad_norm: float = 1.0  # gradients are clipped to this norm (0: no clipping)


@dataclass(frozen=True)
class TrainSpec:
    """One training attempt, as the child process receives it (a JSON file)."""

    job_type: JobType  # sft = full fine-tuning of every weight
    base: BaseWeights
    dataset_path: (
        str  # JSON lines: {"messages": [{"role", "content"}, ...]} or {"prompt", "completion"}
    )
    hyper: Hyperparameters
    output_dir: str  # the child writes checkpoints here
    device: Device = "cpu"
    # The worker's GPUs the child sees, as CUDA_VISIBLE_DEVICES names them (device cuda only):
    # the child knows them as cuda:0, cuda:1, …; more than one holds the model spread over them.
    gpus: tuple[str, ...] = ()
    threads: int = 1
    seed: int = 0
    checkpoint_every: int = 0  # steps between checkpoints; 0: only the final one
    resume_dir: str | None = None  # a checkpoint folder from an earlier attempt
    max_steps: int | None = None  # stop after this many steps in all (None: epochs decide)

    def to_json(self) -> str:
        """The spec as one JSON object (tuples become lists)."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TrainSpec:
        """Read a spec written by `to_json`.

        Raises:
            ValueError: the text is not a spec (a missing or unknown field, a wrong type).
        """
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("a training spec must be a JSON object")
        try:
            hyper = dict(data.pop("hyper"))
            hyper["target_modules"] = tuple(hyper.get("target_modules", ()))
            base = BaseWeights(**data.pop("base"))
            gpus = tuple(data.pop("gpus", ()))
            return cls(base=base, hyper=Hyperparameters(**hyper), gpus=gpus, **data)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a training spec: {exc}") from None


def steps_per_epoch(rows: int, batch_size: int) -> int:
    """Batches in one pass over `rows` rows (the last batch may be short)."""
    return math.ceil(rows / batch_size) if rows > 0 else 0


def total_steps(rows: int, batch_size: int, epochs: int, max_steps: int | None = None) -> int:
    """Optimizer steps a job takes: every batch of every epoch, capped by `max_steps`."""
    steps = steps_per_epoch(rows, batch_size) * epochs
    return steps if max_steps is None else min(steps, max_steps)
