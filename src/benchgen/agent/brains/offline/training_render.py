"""The offline planner's replies about training, written by code from the tools' results:
a job's status, the user's jobs, datasets and trainable models."""

from __future__ import annotations

from typing import Any

from benchgen.core.config import Settings
from benchgen.core.text import plural

MAX_LISTED = 20
UPLOAD_PAGE = "/datasets"
TRAINING_PAGE = "/training"
# Each setting a request may give: its name in a sentence, and how to write it.
_SETTINGS = {
    "epochs": ("the number of epochs", "for 3 epochs"),
    "learning_rate": ("the learning rate", "with learning rate 1e-4"),
    "batch_size": ("the batch size", "with batch size 8"),
    "lora_rank": ("the LoRA rank", "with rank 16"),
    "max_seq_length": ("the max sequence length", "with max sequence length 1024"),
}


def no_datasets(settings: Settings) -> str:
    """The user has nothing to train on yet: where to upload a dataset."""
    return (
        "You have no datasets yet, so there is nothing to train on. Upload one (chat or "
        "prompt/completion JSONL, CSV or Parquet) in the web app at "
        f"{settings.link(UPLOAD_PAGE)}, then ask me again."
    )


def datasets(result: dict[str, Any], settings: Settings) -> str:
    """The user's datasets, one line each with their ids."""
    found = result.get("datasets", [])
    if not found:
        return no_datasets(settings)
    return _listing("Your datasets", [dataset_line(d) for d in found])


def dataset_line(item: dict[str, Any]) -> str:
    """One dataset in a list."""
    return (
        f"{item['name']} ({item['id']}): {item.get('format', '?')}, "
        f"{plural(item.get('row_count', 0), 'row')}, ~{item.get('token_estimate', 0)} tokens"
    )


def bases(result: dict[str, Any]) -> str:
    """Which models can be trained, and why the others cannot."""
    found = result.get("bases", [])
    trainable = [b for b in found if b.get("trainable")]
    if not trainable:
        return (
            "No model on this server can be trained: only the operator's local models "
            "(Hugging Face folders or GGUF files) can, and none is registered."
        )
    lines = [
        f"{b['name']} ({b['id']}): {b['param_count'] / 1e6:.0f}M parameters" for b in trainable
    ]
    return _listing("Models you can train", lines)


def unread(keys: tuple[str, ...]) -> str:
    """Settings the request named whose value could not be read: which, and how to write them."""
    named = [_SETTINGS[key] for key in keys]
    what = " and ".join(name for name, _ in named)
    how = ", ".join(f"`{example}`" for _, example in named)
    return (
        f"I could not read {what} in your request, so I have proposed nothing. "
        f"Write each as a plain number, e.g. {how}."
    )


def untrainable(base: dict[str, Any], result: dict[str, Any]) -> str:
    """The model named cannot be trained: why, and which can."""
    return f"{base['name']} ({base['id']}) cannot be trained here: {base['reason']}.\n" + bases(
        result
    )


def jobs(result: dict[str, Any]) -> str:
    """The user's training jobs, newest first."""
    found = result.get("training_jobs", [])
    if not found:
        return "You have no training jobs yet. Ask me to fine-tune a model on one of your datasets."
    return _listing("Your training jobs, newest first", [_job_line(job) for job in found])


def _job_line(job: dict[str, Any]) -> str:
    return (
        f"{job['id']}: {job.get('job_type', '?')} of {job.get('base_model_name') or '?'} on "
        f"{job.get('dataset_name') or '?'} — {job['status']}, "
        f"{job.get('steps_done', 0)}/{job.get('total_steps', 0)} steps{_loss(job)}"
    )


def status(result: dict[str, Any]) -> str:
    """Whether a training job is done: its state, steps, loss, credits and Trained model."""
    job = result.get("training_job")
    if not job:
        return "You have no training jobs yet. Ask me to fine-tune a model on one of your datasets."
    head = (
        f"Training job {job['id']} ({job.get('job_type', '?')} of "
        f"{job.get('base_model_name') or job.get('base_model_id')} on "
        f"{job.get('dataset_name') or job.get('dataset_id')})"
    )
    progress = f"{job.get('steps_done', 0)}/{job.get('total_steps', 0)} steps{_loss(job)}"
    lines = [f"{head}: {_state(job)}", f"Progress: {progress}.", _credits(job)]
    if job.get("trained_model_id"):
        lines.append(
            f"Trained model: {job['trained_model_id']}. Run it on a benchmark like any model: "
            f"`run {job['trained_model_id']} on …`."
        )
    return "\n".join(lines)


def _state(job: dict[str, Any]) -> str:
    state = str(job["status"])
    waiting = f" {job['waiting_for']}." if job.get("waiting_for") else ""
    if state == "queued":
        return f"queued — not done yet; it has not started.{waiting}"
    if state == "running":
        return "running — not done yet."
    if state == "failed":
        return f"failed. {job.get('error') or ''}".strip()
    return f"{state}."


def _credits(job: dict[str, Any]) -> str:
    if job["status"] in ("queued", "running"):
        return f"Credits: up to {plural(job.get('estimated_credits', 0), 'credit')} reserved."
    return f"Cost: {plural(job.get('credits_charged', 0), 'credit')}."


def _loss(job: dict[str, Any]) -> str:
    loss = job.get("last_loss")
    return "" if loss is None else f", last loss {loss:.4g}"


def cancel(job_id: str | None, settings: Settings) -> str:
    """Cancelling a job is not something the agent does: where the user can."""
    page = f"{TRAINING_PAGE}/{job_id}" if job_id else TRAINING_PAGE
    return (
        "I can't cancel training jobs from the chat. You can cancel it yourself on its page in "
        f"the web app, at {settings.link(page)}. Nothing was done."
    )


def _listing(head: str, lines: list[str]) -> str:
    shown = lines[:MAX_LISTED]
    more = f"\n… and {len(lines) - MAX_LISTED} more." if len(lines) > MAX_LISTED else ""
    return f"{head}:\n" + "\n".join(f"- {line}" for line in shown) + more
