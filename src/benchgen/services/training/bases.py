"""Which catalogue models can be trained: the operator's local models whose weights transformers
loads (a registered Hugging Face folder or GGUF file), never a path a user typed."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select

from benchgen.core.context import Context
from benchgen.core.errors import invalid
from benchgen.core.permissions import Action
from benchgen.db.tables import Model
from benchgen.evals.adapters.local_gguf import SMOLLM2, smollm2_path
from benchgen.services import _model_specs, access, models
from benchgen.training.sizing import TOKENIZER_EXTRAS, TOKENIZER_FILES, BaseInfo, describe_base
from benchgen.training.spec import BaseWeights


@dataclass(frozen=True)
class Base:
    """A trainable model with where its weights lie and what they are."""

    model: Model
    weights: BaseWeights
    info: BaseInfo


@dataclass(frozen=True)
class BaseChoice:
    """A catalogue model as a training base: whether it can be trained, and if not why."""

    id: str
    name: str
    kind: str
    trainable: bool
    reason: str
    param_count: int


# A training base with its place in the catalogue's order, which a page's cursor carries.
PlacedChoice = tuple[BaseChoice, models.CatalogueKey]


def list_training_bases(ctx: Context) -> list[BaseChoice]:
    """Every model the user may use, with whether it can be a training base and why not.

    Raises:
        PermissionDenied: the principal may not read training.
    """
    return [choice for choice, _ in page_training_bases(ctx)]


def page_training_bases(
    ctx: Context, limit: int | None = None, after: models.CatalogueKey | None = None
) -> list[PlacedChoice]:
    """`limit` of the models the user may use (all when None), in the catalogue's order after
    the one keyed `after`, each as a training base with its key; two queries whatever `limit`,
    and only these models' weights are looked at on disk.

    Raises:
        PermissionDenied: the principal may not read training.
        InvalidInput: limit outside 1..MAX_LIST.
    """
    access.require(ctx, Action.TRAINING_READ)
    shown = models.list_models(ctx, None, limit, after)
    # The catalogue checked who may see each; this loads their rows in one query, not one each.
    # Deleting a model only marks its row, so each is there: the page is the catalogue's.
    ids = [view.id for view in shown]
    rows = {row.id: row for row in ctx.session.scalars(select(Model).where(Model.id.in_(ids)))}
    return [(_choice(rows[view.id]), models.catalogue_key(view)) for view in shown]


def _choice(row: Model) -> BaseChoice:
    reason, count = _refusal(row), 0
    if not reason:
        info = _described(_model_specs.base_weights(row))
        reason, count = ("" if info.trainable else info.reason), info.param_count
    return BaseChoice(row.id, row.name, row.kind, not reason, reason, count)


def trainable_base(ctx: Context, model_id: str) -> Base:
    """The model `model_id` as a training base, for services that have checked access.

    Raises:
        NotFound: no such model the user may use.
        InvalidInput: not a model that can be trained here (the message says why).
    """
    row = _model_specs.usable_model(ctx, model_id)
    reason = _refusal(row)
    if reason:
        raise invalid(["base_model_id"], reason)
    weights = _model_specs.base_weights(row)
    info = _described(weights)
    if not info.trainable:
        raise invalid(["base_model_id"], f"{row.name!r} cannot be trained: {info.reason}")
    return Base(row, weights, info)


def _refusal(row: Model) -> str:
    if row.training_job_id is not None:
        return f"{row.name!r} is a Trained model: train its base model on the combined data"
    if row.kind not in _model_specs.LOCAL_KINDS or row.owner_id is not None:
        return (
            f"{row.name!r} is a {row.kind} model: only the operator's local models "
            "(Hugging Face folders or GGUF files) can be trained here"
        )
    if row.endpoint_model == SMOLLM2 and smollm2_path() is None:
        return "the SmolLM2 package is not installed on this server"
    return ""


def _described(weights: BaseWeights) -> BaseInfo:
    try:
        stamp = _stamp(Path(weights.path), weights.kind)
    except OSError:
        return BaseInfo("", 0, 0, 0, False, "its weights are missing on this server")
    return _describe_cached(weights, stamp)


def _stamp(path: Path, kind: str) -> tuple[tuple[str, int, int], ...]:
    """The name, mtime and size of a GGUF file, or of a folder and the files in it that
    `describe_base` reads or measures: a file rewritten in place leaves its folder's mtime as
    it was.

    Raises:
        OSError: the file or folder is missing.
    """
    inside: list[Path] = []
    if kind != "gguf":
        tokenizer = [path / name for name in (*TOKENIZER_FILES, *TOKENIZER_EXTRAS)]
        inside = [*path.glob("config.json"), *path.glob("*.safetensors")]
        inside += [item for item in tokenizer if item.exists()]
    stats = [(str(item), os.stat(item)) for item in [path, *sorted(inside)]]
    return tuple((name, found.st_mtime_ns, found.st_size) for name, found in stats)


@functools.lru_cache(maxsize=64)
def _describe_cached(weights: BaseWeights, _stamp: tuple[tuple[str, int, int], ...]) -> BaseInfo:
    # Reading a config or GGUF header is cheap but not free; the files' mtimes and sizes key
    # the cache so an operator replacing or damaging the weights is seen.
    return describe_base(weights)
