"""The offline planner's training requests: propose "fine-tune MODEL on DATASET" once the model
is a trainable base and the dataset one of the user's (else offer the candidates as buttons),
say how a job is doing, and list datasets, jobs and trainable models."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from benchgen.agent.brains.offline import render, steps
from benchgen.agent.brains.offline import training_render as said
from benchgen.agent.brains.offline.ask import Ask, Call, Step
from benchgen.agent.brains.offline.labels import MAX_OPTIONS, titled
from benchgen.agent.brains.offline.naming import MODEL_KEYS, find, find_id, words
from benchgen.agent.brains.offline.parse import Intent
from benchgen.agent.brains.offline.training_words import (
    TrainingRequest,
    name_words,
    options_words,
    read_request,
)

DATASET_KEYS = ("name", "id")
# "is it done?" names neither: these words say it is about a training job, "run" about a run.
_ABOUT_TRAINING = re.compile(r"\b(?:train\w*|fine[\s-]?tun\w*|finetun\w*|jobs?|lora)\b", re.I)
_ABOUT_RUN = re.compile(r"\bruns?\b", re.I)
_CANCEL = re.compile(r"^(?:cancel|stop|abort|kill|halt|end)\b", re.I)


def step_train(ask: Ask, intent: Intent) -> Step:
    """Propose a training job when the model and dataset are clear; else offer candidates."""
    if _CANCEL.match(intent.phrase):
        return said.cancel(find_id(ask.text, "tr"), ask.settings)
    request = read_request(ask.text)
    if request.unread:
        # Proposing without a value the user gave would train something they did not ask for.
        return said.unread(request.unread)
    needed: list[Call] = [("list_training_bases", {}), ("list_datasets", {})]
    if request.gpu is not None:
        needed.append(("list_compute", {}))
    refused = _refused(ask, needed)
    if refused is not None:
        return refused
    if any(ask.result(tool) is None for tool, _ in needed):
        return needed
    if not ask.result("list_datasets")["datasets"]:
        return said.no_datasets(ask.settings)
    base, dataset = _base(ask, request), _dataset(ask, request)
    if isinstance(base, str):
        return base
    if isinstance(base, list):
        return _offer_bases(request, base, dataset)
    if isinstance(dataset, list):
        return _offer_datasets(request, base, dataset)
    gpu = _gpu(ask, request, base, dataset)
    if isinstance(gpu, tuple):
        return [("propose_training", _arguments(request, base, dataset, gpu[0]))]
    return gpu


def _refused(ask: Ask, needed: list[Call]) -> str | None:
    """A lookup the platform refused, said plainly (the planner checks only the last result)."""
    for tool, _ in needed:
        got = ask.result(tool)
        if isinstance(got, dict) and "error" in got:
            return render.error(tool, got)
    return None


def _base(ask: Ask, request: TrainingRequest) -> dict[str, Any] | list[dict[str, Any]] | str:
    """The base model, else the candidates to offer, else why the one named cannot be trained."""
    listed = ask.result("list_training_bases")
    entries: list[dict[str, Any]] = listed["bases"]
    trainable = [b for b in entries if b.get("trainable")]
    if not trainable:
        return said.bases(listed)
    given = find_id(ask.text, "mdl")
    if given is not None:
        # An id no list holds is left to the platform, which says what is wrong with it.
        found = [b for b in entries if b["id"] == given] or [{"id": given, "trainable": True}]
    else:
        found = find(request.model, entries, MODEL_KEYS)
    good = [b for b in found if b.get("trainable")]
    if len(good) == 1:
        return good[0]
    if len(found) == 1 and not good:
        return said.untrainable(found[0], listed)
    return good or trainable


def _dataset(ask: Ask, request: TrainingRequest) -> dict[str, Any] | list[dict[str, Any]]:
    """The user's dataset the request names, else the candidates to offer."""
    entries: list[dict[str, Any]] = ask.result("list_datasets")["datasets"]
    given = find_id(ask.text, "ds")
    if given is not None:
        found = [d for d in entries if d["id"] == given] or [{"id": given, "name": given}]
    else:
        found = find(request.dataset, entries, DATASET_KEYS)
    return found[0] if len(found) == 1 else found or entries


def _gpu(
    ask: Ask, request: TrainingRequest, base: dict[str, Any], dataset: dict[str, Any]
) -> tuple[str | None] | Step:
    """The GPU type to ask for (None for the CPU); several that fit become buttons."""
    if request.gpu is None:
        return (None,)
    pools = [p for p in ask.result("list_compute")["pools"] if p.get("kind") == "gpu"]
    if not pools:
        return "This server offers no GPU for training; ask without the GPU to train on the CPU."
    wanted = words(request.gpu)
    fitting = [p for p in pools if wanted <= words(str(p["gpu_type"]))]
    if len(fitting) == 1:
        return (str(fitting[0]["gpu_type"]),)
    if not fitting:
        return (request.gpu,)  # the platform's refusal names the GPUs there are
    options = [
        f"Train {_named(base)}{options_words(request, str(p['gpu_type']))} on "
        f"{_named(dataset)}{name_words(request)}"
        for p in fitting[:MAX_OPTIONS]
    ]
    return [("ask_user", {"question": "Which GPU should I train on?", "options": options})]


def _offer_bases(
    request: TrainingRequest,
    pool: list[dict[str, Any]],
    dataset: dict[str, Any] | list[dict[str, Any]],
) -> Step:
    named = words(request.model)
    lead = f'I found no single trainable model called "{request.model}". ' if named else ""
    if isinstance(dataset, dict):
        on = f" on {_named(dataset)}"
    else:
        on = f" on {request.dataset}" if words(request.dataset) else ""
    options = [
        f"Train {_named(base)}{options_words(request, request.gpu)}{on}{name_words(request)}"
        for base in pool[:MAX_OPTIONS]
    ]
    return [("ask_user", {"question": f"{lead}Which model should I train?", "options": options})]


def _offer_datasets(
    request: TrainingRequest, base: dict[str, Any], pool: list[dict[str, Any]]
) -> Step:
    named = words(request.dataset)
    lead = f'You have no single dataset called "{request.dataset}". ' if named else ""
    model = f"Train {_named(base)}{options_words(request, request.gpu)}"
    options = [f"{model} on {_named(d)}{name_words(request)}" for d in pool[:MAX_OPTIONS]]
    question = f"{lead}Which dataset should I train {_named(base)} on?"
    return [("ask_user", {"question": question, "options": options})]


def _named(entry: dict[str, Any]) -> str:
    name = str(entry.get("name") or entry["id"])
    return titled({"title": name, "id": entry["id"]})


def _arguments(
    request: TrainingRequest, base: dict[str, Any], dataset: dict[str, Any], gpu: str | None
) -> dict[str, Any]:
    arguments: dict[str, Any] = {"base_model_id": base["id"], "dataset_id": dataset["id"]}
    if request.job_type is not None:
        arguments["job_type"] = request.job_type
    if request.hyperparameters:
        arguments["hyperparameters"] = dict(request.hyperparameters)
    if gpu is not None:
        arguments["compute"] = {"gpu_type": gpu, "gpus": request.gpus or 1}
    if request.name:
        arguments["name"] = request.name
    return arguments


def step_status(ask: Ask, intent: Intent) -> Step:
    """Whether a run or a training job is done: the one named, else the newest of either —
    the words ("the training", "my run") decide when they say which."""
    if find_id(ask.text, "tr") is not None or _ABOUT_TRAINING.search(ask.text):
        return step_training_status(ask, intent)
    if find_id(ask.text, "run") is not None or _ABOUT_RUN.search(ask.text):
        return steps.step_status(ask, intent)
    both: list[Call] = [("run_status", {}), ("training_status", {})]
    run, job = ask.result("run_status"), ask.result("training_status")
    if run is None or job is None:
        return both
    refused = _refused(ask, both)
    if refused is not None:
        return refused
    if _newer(job, "training_job", run, "run"):
        return said.status(job)
    return render.status(run)


def _newer(a: Any, a_key: str, b: Any, b_key: str) -> bool:
    """Whether result `a` holds something created after `b`'s (a refusal holds nothing)."""
    first = a.get(a_key) if isinstance(a, dict) else None
    second = b.get(b_key) if isinstance(b, dict) else None
    if not first:
        return False
    return not second or _when(first["created_at"]) > _when(second["created_at"])


def _when(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def step_training_status(ask: Ask, intent: Intent) -> Step:
    """How a training job is doing: the one named, else the newest."""
    got = ask.result("training_status")
    if got is not None:
        return said.status(got)
    job_id = find_id(ask.text, "tr")
    return [("training_status", {"training_job_id": job_id} if job_id else {})]


def step_lists(ask: Ask, intent: Intent) -> Step:
    """List the user's datasets, training jobs, or the models that can be trained."""
    tool = intent.kind
    got = ask.result(tool)
    if got is None:
        return [(tool, {})]
    if tool == "list_datasets":
        return said.datasets(got, ask.settings)
    return said.jobs(got) if tool == "list_training_jobs" else said.bases(got)


STEPS: dict[str, Callable[[Ask, Intent], Step]] = {
    "train": step_train,
    "status": step_status,
    "training_status": step_training_status,
    "list_datasets": step_lists,
    "list_training_jobs": step_lists,
    "list_training_bases": step_lists,
}
