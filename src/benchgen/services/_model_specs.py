"""Models as the services that run them need them, without permission checks: the row a user may
use, the formats it answers, its engine spec with the key decrypted, the operator's host
allowlist."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.errors import NotFound, invalid
from benchgen.db.tables import Model, TrainingJob
from benchgen.evals.adapters import builtin
from benchgen.evals.scorers.registry import CUSTOM, MCQ, QA
from benchgen.evals.types import THREADS_PARAM, FatalModelError, ModelSpec
from benchgen.services import _keyring
from benchgen.services._artifacts import store_for

if TYPE_CHECKING:
    from benchgen.training.spec import BaseWeights

ANTHROPIC_URL = "https://api.anthropic.com/v1"
# Models whose weights lie on the server and run on its own CPUs, registered only by the operator.
LOCAL_KINDS = ("local_gguf", "local_hf")
# What a model that reads the prompt can answer; a baseline answers only what its rule fits.
READER_FORMATS = frozenset({QA, MCQ, CUSTOM})
_VISIBLE_ASCII = frozenset(map(chr, range(0x21, 0x7F)))


def key_problem(key: str) -> str:
    """Why a request header cannot carry this API key (trimmed already), or "" when it can:
    one with a zero-width space or an accent from a copied page failed every request of every
    run it was saved for."""
    if _VISIBLE_ASCII.issuperset(key):
        return ""
    return "must be the key as the provider shows it: ASCII letters, digits and signs"


def usable_model(ctx: Context, model_id: str) -> Model:
    """A live platform model or one of the acting user's own (for services that use it).

    Raises:
        NotFound: missing, deleted, or another user's (indistinguishable on purpose).
    """
    row = ctx.session.get(Model, model_id)
    if row is None or row.deleted_at is not None:
        raise NotFound("No such model.", {"id": model_id})
    if row.owner_id is not None and row.owner_id != ctx.principal.user_id:
        raise NotFound("No such model.", {"id": model_id})
    return row


def answerable_formats(row: Model) -> frozenset[str]:
    """The benchmark formats `row` can answer (none for a baseline the engine does not know)."""
    if row.kind == "builtin":
        return builtin.FORMATS.get(row.endpoint_model, frozenset())
    return READER_FORMATS


def require_answerable(model: Model, fmt: str) -> None:
    """Refuse a run whose model cannot answer the benchmark's questions.

    Raises:
        InvalidInput: `model` cannot answer questions of format `fmt`.
    """
    formats = answerable_formats(model)
    if fmt not in formats:
        can = " or ".join(sorted(formats)) or "no"
        message = f"{model.name!r} answers only {can} benchmarks; this benchmark is {fmt}"
        raise invalid(["model_id"], message)


def model_spec(ctx: Context, row: Model) -> ModelSpec:
    """How the engine calls `row`, with the key decrypted (never stored or logged again)."""
    if row.training_job_id is not None:
        return _trained_spec(ctx, row)
    key = _keyring.decrypt(ctx, row.api_key_enc) if row.api_key_enc else None
    base_url = row.base_url or (ANTHROPIC_URL if row.kind == "anthropic" else None)
    params = dict(row.params)
    if row.kind in LOCAL_KINDS:
        params[THREADS_PARAM] = ctx.settings.local_model_threads
    return ModelSpec(row.kind, row.endpoint_model, base_url, key, params, allowlist(ctx))


def allowlist(ctx: Context) -> frozenset[str]:
    """Hosts an operator opened for model endpoints despite private addresses."""
    raw = ctx.settings.model_host_allowlist
    return frozenset(host.strip().lower() for host in raw.split(",") if host.strip())


def base_weights(row: Model, settings: Settings | None = None) -> BaseWeights:
    """Where a local model's weights lie: its row is the operator's, and so is the path. With
    `settings`, a GGUF base is kept converted in the data folder for the loads to come."""
    # Local models' code (weights, adapters) loads for local models alone, here and in
    # `_trained_spec`: `benchgen run` on a hosted model reaches its first request sooner.
    from benchgen.evals.adapters.local_gguf import SMOLLM2, smollm2_path
    from benchgen.training.spec import BaseWeights

    if row.kind == "local_hf":
        return BaseWeights("hf_folder", row.endpoint_model)
    path = smollm2_path() if row.endpoint_model == SMOLLM2 else row.endpoint_model
    return BaseWeights("gguf", path or "", weights_cache(settings) if settings else None)


def weights_cache(settings: Settings) -> str:
    """Where GGUF bases are kept dequantised for transformers (safetensors, 4 bytes a weight:
    about 0.5 GB for SmolLM2); the folder may be deleted at any time, and is made again."""
    return str(settings.data_dir / "cache" / "weights")


def trained_key(training_job_id: str) -> str:
    """Where a training job's final checkpoint lies in artifact storage."""
    return f"training/{training_job_id}/final"


def _trained_spec(ctx: Context, row: Model) -> ModelSpec:
    """A Trained model: its base model's weights with the job's checkpoint on top."""
    from benchgen.evals.adapters.local_hf import CACHE_PARAM

    job = ctx.session.get(TrainingJob, row.training_job_id)
    base = ctx.session.get(Model, job.base_model_id) if job is not None else None
    if job is None or base is None:
        raise FatalModelError(f"the training job behind {row.name!r} is gone")
    folder = store_for(ctx.settings).folder(trained_key(job.id))
    part = "adapter_dir" if job.job_type == "lora" else "weights_dir"
    weights = base_weights(base, ctx.settings)
    params = {
        **row.params,
        part: str(folder),
        CACHE_PARAM: weights.cache_dir,
        THREADS_PARAM: ctx.settings.local_model_threads,
    }
    return ModelSpec("local_hf", weights.path, None, None, params, allowlist(ctx))
