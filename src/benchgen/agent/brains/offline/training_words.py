"""Reading training requests for the offline planner: "fine-tune MODEL on DATASET" in its
phrasings with epochs, learning rate, batch size, job type and compute, and the questions about
training jobs, datasets and trainable models."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

_WORD = r"(?:train|training|fine[\s-]?tun\w*|finetun\w*)"
# "trainable" and "be trained" ask about training; "my trained models" are models to run.
_BE_TRAINED = r"\bbe\s+(?:trained|fine[\s-]?tuned|finetuned)\b"
_TRAIN_WORD = re.compile(
    rf"\b{_WORD}\b|\btrainable\b|{_BE_TRAINED}|^(?:lora|sft)\b|\b(?:an?|the|my)\s+(?:lora|sft)\b"
    r"|\btr_[A-Za-z0-9]",
    re.I,
)
# "run my fine-tuned model on Capitals" evaluates a model; it does not train one.
_EVALUATE = re.compile(
    r"^(?:run|evaluate|eval|test|try|score|benchmark)\b"
    r"(?!\s+(?:an?\s+|the\s+|my\s+)?(?:lora|sft|training|fine[\s-]?tun(?:e|ing)\b"
    r"|finetun(?:e|ing)\b))",
    re.I,
)
_VERB = re.compile(
    r"^(?:(?:start|launch|run|do|begin|kick off|make|set up|create)\s+(?:an?\s+|the\s+|my\s+)?)?"
    r"(?:full(?:[\s-]parameter)?\s+)?"
    r"(?:fine[\s-]?tun(?:e|ing)|finetun(?:e|ing)|lora(?:[\s-]?tune)?|sft|train(?:ing)?)\b"
    r"(?:\s+(?:jobs?|runs?|of|for))?\s*(?P<rest>.*)$",
    re.I,
)
# "training status", "fine-tune done?": a verb-first request that asks about a job.
# A request that does not start with its verb ("I'd like a fine-tune of X on Y").
_AFTER_WORD = re.compile(rf"\b{_WORD}\b(?:\s+(?:jobs?|runs?|of|for))?\s*(?P<rest>.*)$", re.I)
_STATUS_REST = re.compile(r"^(?:status|progress|done|finished|going|loss|update|is|has)\b", re.I)
_STATUS = re.compile(
    r"^(?:is|are|has|have|did|does|do|how|what's|whats|what is|where|when|any)\b"
    r"|\b(?:status|progress|done|finished|ready|going|loss|yet|complete[d]?|over)\b",
    re.I,
)
_LIST = r"\b(?:list|show|see|view|display|get|give|all|my|which|what)\b"
_LIST_BASES = re.compile(
    r"\b(?:which|what)\b.*\b(?:can|could)\b.*\b(?:be\s+)?(?:train\w*|fine[\s-]?tun\w*|finetun\w*)"
    rf"|\btrainable\b|\b(?:which|what|can|could|may)\b.*{_BE_TRAINED}|\bbase models?\b",
    re.I,
)
_LIST_JOBS = re.compile(
    _LIST + rf".*\b(?:{_WORD}\s+(?:jobs|runs)|trainings|fine[\s-]?tunes)\b", re.I
)
_LIST_DATASETS = re.compile(_LIST + r".*\bdatasets\b|^datasets[.?!]*$", re.I)
# "list my fine-tuned models": Trained models are models, listed with the others.
_TRAINED_MODELS = re.compile(_LIST + r".*\b(?:fine[\s-]?tuned|finetuned)\s+models?\b", re.I)

_NUMBER = r"(?:of\s+|=\s*|:\s*|at\s+|to\s+)?"
_NUM = r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:e[-+]?\d+)?"


def _value(group: str) -> str:
    # A number as a whole token, any length: "1,000" and "1.5" are never read as "000" or
    # "5", and "12345" stays 12345 for the platform to refuse by its range.
    return rf"(?<![\w.,])(?P<{group}>{_NUM})(?![\w]|[.,]\d)"


_LEAD = r"\b(?:with\s+|at\s+|and\s+)?(?:an?\s+|the\s+)?"
_SETTINGS = {
    "learning_rate": r"(?:learning[\s-]rate|lr)",
    "batch_size": r"batch[\s-]?size",
    "lora_rank": r"(?:lora\s+)?rank",
    "max_seq_length": r"(?:max(?:imum)?\s+)?(?:sequence|seq)[\s-]?(?:length|len)",
}
_OPTIONS: dict[str, re.Pattern[str]] = {
    "epochs": re.compile(
        r"(?:\bfor\s+)?" + _value("v") + r"\s+epochs?\b|\bepochs?\s*[=:]\s*" + _value("w"), re.I
    ),
    **{
        key: re.compile(_LEAD + words + r"\s*" + _NUMBER + _value("v"), re.I)
        for key, words in _SETTINGS.items()
    },
}
# A setting named but not read ("for ten epochs", "batch size 1,000") is said back, never
# dropped. "lr" and "rank" occur in names too ("Page rank data"): they count with a number.
_UNREAD = {
    "epochs": re.compile(r"\bepochs?\b", re.I),
    "learning_rate": re.compile(r"\blearning[\s-]rate\b|\blr\s*" + _NUMBER + r"[-+.]?\d", re.I),
    "batch_size": re.compile(r"\bbatch[\s-]?size\b", re.I),
    "lora_rank": re.compile(r"\brank\s*" + _NUMBER + r"[-+.]?\d", re.I),
    "max_seq_length": re.compile(r"\b(?:sequence|seq)[\s-]?(?:length|len)\b", re.I),
}
_QUOTED = re.compile(r"[\"“][^\"”]*[\"”]")
_SFT = re.compile(r"\bfull(?:[\s-]parameter)?\s+(?:fine[\s-]?tun\w*|finetun\w*)|\bsft\b", re.I)
_LORA = re.compile(r"\blora\b", re.I)
_JOB_TYPE_WORDS = re.compile(
    r"\b(?:as|with|using|via)\s+(?:an?\s+)?(?:lora|sft|full(?:[\s-]parameter)?\s+"
    r"(?:fine[\s-]?tun\w*|finetun\w*))(?:\s+adapters?)?\b",
    re.I,
)
_CPU = re.compile(r"\b(?:on|using|with)\s+(?:the\s+|a\s+)?cpus?\b", re.I)
_GPU = re.compile(
    r"\b(?:on|using|with)\s+(?:an?\s+|the\s+)?(?:(?P<n>\d{1,2})\s*(?:x|×)?\s*)?"
    r"(?P<type>(?:(?!(?:on|with|using|and|for)\b)[\w.-]+\s+){0,5}?)gpus?\b",
    re.I,
)
_NAME = re.compile(r"\b(?:and\s+)?(?:call|name)\s+it\s+[\"“']?(?P<v>[^\"”']+?)[\"”']?\s*$", re.I)
_FILLER = re.compile(r"\b(?:please|for me|now|thanks)\b|[\s,.!?]+$", re.I)
_CONNECTOR = re.compile(r"(?:^|\s+)(?:on|with|using|from)\s+", re.I)
_DATASET_LEAD = re.compile(
    r"^(?:(?:my|the|a|this|our)\s+)?(?:(?:training\s+)?(?:data\s*set|data|file)\b\s*)?"
    r"(?:(?:called|named|titled)\s+)?",
    re.I,
)
_QUOTES = " \"'“”‘’"


@dataclass(frozen=True)
class TrainingRequest:
    """What a training request said.

    Attributes:
        model: the words naming the base model ("" when left open).
        dataset: the words naming the dataset ("" when left open).
        job_type: "lora" or "sft" when the request named one.
        hyperparameters: the values the request gave (epochs, learning_rate…).
        gpu: None when no GPU was asked for, "" for any GPU, else the words naming its type.
        gpus: how many GPUs, when a number was given.
        name: the Trained model's name, when given ("… and call it X").
        unread: the settings the request named but whose value could not be read.
    """

    model: str = ""
    dataset: str = ""
    job_type: str | None = None
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    gpu: str | None = None
    gpus: int | None = None
    name: str = ""
    unread: tuple[str, ...] = ()


def training_kind(plain: str) -> str | None:
    """Which training request `plain` (polite words removed) is, if any: train,
    training_status, list_datasets, list_training_jobs or list_training_bases."""
    if _LIST_DATASETS.search(plain) and not _VERB.match(plain):
        return "list_datasets"
    if not _TRAIN_WORD.search(plain) or _EVALUATE.match(plain):
        return None
    if _LIST_BASES.search(plain):
        return "list_training_bases"
    if _LIST_JOBS.search(plain) and not _VERB.match(plain):
        return "list_training_jobs"
    if _TRAINED_MODELS.search(plain) and not _VERB.match(plain):
        return None
    verb = _VERB.match(plain)
    if verb and not _STATUS_REST.match(verb.group("rest")):
        return "train"
    return "training_status" if _STATUS.search(plain) else "train"


def read_request(text: str) -> TrainingRequest:
    """The model, dataset, job type, hyperparameters and compute a training request gives."""
    hyper, unread, rest = _settings(" ".join(text.split()))
    job_type = "sft" if _SFT.search(rest) else "lora" if _LORA.search(rest) else None
    rest = _JOB_TYPE_WORDS.sub(" ", rest)
    gpu, gpus = None, None
    cpu = _CPU.search(rest)
    if cpu:
        rest = _cut(rest, cpu)
    else:
        found_gpu = _GPU.search(rest)
        if found_gpu:
            gpu, rest = found_gpu.group("type").strip(), _cut(rest, found_gpu)
            gpus = int(found_gpu.group("n")) if found_gpu.group("n") else None
    named = _NAME.search(rest)
    name = named.group("v").strip() if named else ""
    rest = _cut(rest, named) if named else rest
    # Looked for last, in what no option or name took, and outside quoted names.
    unnamed = _QUOTED.sub(" ", rest)
    unread += [key for key, said in _UNREAD.items() if key not in unread and said.search(unnamed)]
    model, dataset = _slots(_FILLER.sub("", rest).strip())
    return TrainingRequest(model, dataset, job_type, hyper, gpu, gpus, name, tuple(unread))


def _settings(text: str) -> tuple[dict[str, Any], list[str], str]:
    """The settings `text` gives, those it gives as numbers that cannot be used, and `text`
    without them."""
    hyper: dict[str, Any] = {}
    unread: list[str] = []
    for key, pattern in _OPTIONS.items():
        found = pattern.search(text)
        if found is None:
            continue
        value = _number(key, found.group("v") or found.group("w"))
        if value is None:
            unread.append(key)
        else:
            hyper[key] = value
        text = _cut(text, found)
    return hyper, unread, text


def _number(key: str, said: str) -> int | float | None:
    """`said` as the setting's type: a fraction for a whole-number setting ("1.5 epochs") stays
    one, for the platform to refuse by name. None for a number too large to read."""
    try:
        number = float(said)
        if key != "learning_rate" and number.is_integer():
            return int(said) if said.lstrip("+-").isdigit() else int(number)
    except ValueError:  # more digits than Python reads as one int
        return None
    return number if math.isfinite(number) else None


def _cut(text: str, found: re.Match[str]) -> str:
    return " ".join((text[: found.start()] + " " + text[found.end() :]).split())


def _slots(text: str) -> tuple[str, str]:
    """ "fine-tune SmolLM2 on my dataset Support replies" → the model's and dataset's words."""
    verb = _VERB.match(text) or _AFTER_WORD.search(text)
    rest = verb.group("rest") if verb else text
    parts = _CONNECTOR.split(rest, maxsplit=1)
    model = parts[0].strip(_QUOTES)
    dataset = _DATASET_LEAD.sub("", parts[1]).strip(_QUOTES) if len(parts) == 2 else ""
    return model, dataset


def options_words(request: TrainingRequest, gpu_type: str | None) -> str:
    """The request's options (but its name) in words `read_request` reads back the same, for
    button labels."""
    words = " as a full fine-tune" if request.job_type == "sft" else ""
    hyper = request.hyperparameters
    if "epochs" in hyper:
        words += f" for {hyper['epochs']} epochs"
    for key, said in (
        ("learning_rate", "learning rate"),
        ("batch_size", "batch size"),
        ("lora_rank", "rank"),
        ("max_seq_length", "max sequence length"),
    ):
        if key in hyper:
            words += f" with {said} {hyper[key]:g}"
    if gpu_type is not None:
        words += " on " + " ".join(filter(None, [str(request.gpus or 1), gpu_type, "GPU"]))
    return words


def name_words(request: TrainingRequest) -> str:
    """The Trained model's name as a label's last words (it is read from the end)."""
    return f' and call it "{request.name}"' if request.name else ""
