"""The training form: its fields as typed, the request they make, the ranges it shows, and
each refusal at its field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.datastructures import FormData

from benchgen.core.errors import InvalidInput, NotFound
from benchgen.services.training.plans import ComputeIn, HyperparametersIn
from benchgen.web.pages.question_form import Problems, text_of

LORA_ONLY = ("lora_rank", "lora_alpha", "lora_dropout")
NUMBERS = ("epochs", "learning_rate", "batch_size", "max_seq_length", *LORA_ONLY)
FIELDS = ("name", "job_type", "base_model_id", "dataset_id", "compute", "gpus")
ALL_FIELDS = (*FIELDS, *NUMBERS, "target_modules")
JOB_TYPES = {"lora": "LoRA adapter (small and fast)", "sft": "Full fine-tune (every weight)"}
LABELS = {
    "name": "Name",
    "job_type": "Job type",
    "base_model_id": "Base model",
    "dataset_id": "Dataset",
    "compute": "Compute",
    "gpu_type": "Compute",
    "gpus": "GPUs (GPU pools only)",
    "hyperparameters": "Hyperparameters",
    "epochs": "Epochs",
    "learning_rate": "Learning rate",
    "batch_size": "Batch size",
    "max_seq_length": "Max sequence length",
    "lora_rank": "LoRA rank",
    "lora_alpha": "LoRA alpha",
    "lora_dropout": "LoRA dropout",
    "target_modules": "Target modules",
}
# Where a refusal located at a request part is shown: the form's field of the same name, or
# the compute choice for the GPU type.
_FIELD_OF = {"gpu_type": "compute", **{name: name for name in ALL_FIELDS}}


@dataclass(frozen=True)
class NumberField:
    """One number input with the range and default the request shape declares."""

    name: str
    label: str
    default: str
    min: str
    max: str
    step: str
    hint: str


def number_fields() -> list[NumberField]:
    """The hyperparameters' inputs, read from `HyperparametersIn` so the form and the check
    never disagree about a range."""
    return [_number(HyperparametersIn, name) for name in NUMBERS]


def gpus_field() -> NumberField:
    """The GPU count's input, from `ComputeIn`."""
    return _number(ComputeIn, "gpus")


def _number(shape: type[HyperparametersIn | ComputeIn], name: str) -> NumberField:
    info = shape.model_fields[name]
    bounds = {
        key: getattr(part, key)
        for part in info.metadata
        for key in ("ge", "gt", "le")
        if getattr(part, key, None) is not None
    }
    low = bounds.get("ge", bounds.get("gt"))
    high = bounds["le"]
    words = f"more than {low}, at most {high}" if "gt" in bounds else f"{low} to {high}"
    hint = f"{words}; default {info.default}"
    if info.description:
        hint = f"{info.description}: {hint}"
    step = "1" if info.annotation is int else "any"
    return NumberField(
        name, LABELS[name], str(info.default), str(low), str(bounds["le"]), step, hint
    )


def defaults(base_model_id: str, dataset_id: str) -> dict[str, str]:
    """What the form shows before anything is typed."""
    typed = {name: "" for name in ALL_FIELDS}
    typed.update({field.name: field.default for field in number_fields()})
    modules = HyperparametersIn.model_fields["target_modules"].get_default(
        call_default_factory=True
    )
    typed.update(
        job_type="lora",
        base_model_id=base_model_id,
        dataset_id=dataset_id,
        compute="cpu",
        gpus="1",
        target_modules=", ".join(modules),
    )
    return typed


def typed_of(form: FormData) -> dict[str, str]:
    """Every field as the person typed it (kept to show the form again)."""
    return {name: text_of(form, name) for name in ALL_FIELDS}


def request_of(typed: dict[str, str]) -> dict[str, Any]:
    """The `TrainingIn` shape the fields make. Blank numbers take their defaults; the rest go
    through as typed so the service's own check names each bad value."""
    hyper: dict[str, Any] = {name: typed[name].strip() for name in NUMBERS if typed[name].strip()}
    modules = [part.strip() for part in typed["target_modules"].split(",") if part.strip()]
    if modules:
        hyper["target_modules"] = modules
    choice = typed["compute"].strip()
    compute: dict[str, Any] = {}
    if choice not in ("", "cpu"):
        compute = {"gpu_type": choice.removeprefix("gpu:"), "gpus": typed["gpus"].strip() or "1"}
    return {
        "job_type": typed["job_type"].strip() or "lora",
        "base_model_id": typed["base_model_id"].strip(),
        "dataset_id": typed["dataset_id"].strip(),
        "hyperparameters": hyper,
        "compute": compute,
        "name": typed["name"].strip() or None,
    }


def problems_of(exc: InvalidInput | NotFound, typed: dict[str, str]) -> Problems:
    """Each problem at the field it concerns (a model or dataset not found at its picker)."""
    found = Problems()
    if isinstance(exc, NotFound):
        missing = str(exc.details.get("id", ""))
        key = (
            "dataset_id" if missing and missing == typed["dataset_id"].strip() else "base_model_id"
        )
        found.add(key, LABELS[key], "choose one from the list")
        return found
    for error in exc.details.get("errors") or [{"loc": [], "msg": exc.message}]:
        loc = [str(part) for part in error.get("loc", []) if isinstance(part, str)]
        key = next((_FIELD_OF[part] for part in reversed(loc) if part in _FIELD_OF), "")
        if not key and loc == ["hyperparameters"]:
            key = "hyperparameters"
        found.add(key, LABELS.get(key, ""), str(error.get("msg", "")))
    return found
