"""The model catalogue: platform models for everyone, each user's own endpoints, their keys."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, Field, StringConstraints, field_validator
from pydantic_core import PydanticCustomError
from sqlalchemy import ColumnElement, and_, false, or_, select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput, NotFound, invalid, invalid_all
from benchgen.core.ids import new_id
from benchgen.core.permissions import Action
from benchgen.core.statuses import ModelStatus
from benchgen.db.tables import Model
from benchgen.evals.adapters import builtin
from benchgen.evals.adapters.local_gguf import smollm2_path
from benchgen.evals.netguard import check_endpoint
from benchgen.evals.types import FatalModelError
from benchgen.services import _keyring, _model_specs, access, audit
from benchgen.services.specs import (
    MAX_LIST,
    STRICT,
    BoundedTitle,
    BoundedUrl,
    Line,
    Title,
    check_window,
    not_bool,
    parse,
)
from benchgen.training.sizing import unreadable_folder, unreadable_gguf

USER_KINDS = ("openai_compat", "anthropic")
# Anthropic's API answers nothing without a key: saved without one, every run of it failed.
NEEDS_KEY = "an Anthropic model needs an API key: Anthropic answers nothing without one"
PLATFORM_KINDS = (*USER_KINDS, *_model_specs.LOCAL_KINDS, "builtin")


def _api_key(value: str) -> str:
    """A key a request header can carry (STRICT trims a paste's spaces and line break first)."""
    problem = _model_specs.key_problem(value)
    if problem:
        raise PydanticCustomError("api_key", problem)
    return value


ApiKey = Annotated[str, StringConstraints(max_length=2000), AfterValidator(_api_key)]


class ModelIn(BaseModel):
    """A model to register. Users may register endpoints; local files and baselines are the
    operator's (a user-chosen file path would let anyone read the server's disk)."""

    model_config = STRICT

    name: Title = Field(min_length=1, max_length=200, examples=["My vLLM Qwen"])
    kind: Literal["openai_compat", "anthropic", "local_gguf", "local_hf", "builtin"] = (
        "openai_compat"
    )
    endpoint_model: Line = Field(min_length=1, max_length=500, examples=["qwen2.5-7b-instruct"])
    base_url: BoundedUrl | None = Field(None, examples=["https://api.example.com/v1"])
    api_key: ApiKey | None = None
    params: dict[str, Any] = Field(default_factory=dict)


class PlatformModelIn(ModelIn):
    """A model offered to everyone, with its price in credits (a user's own model has none:
    their key pays, so a price in their request is refused as an unknown field)."""

    price_per_question: int = Field(0, ge=0, le=10**6)
    price_per_1k_tokens: int = Field(0, ge=0, le=10**6)

    _whole = field_validator("price_per_question", "price_per_1k_tokens", mode="before")(not_bool)


class ModelChange(BaseModel):
    """Rename a model, rotate its key, or change its parameters."""

    model_config = STRICT

    name: BoundedTitle | None = None
    api_key: ApiKey | None = None
    params: dict[str, Any] | None = None


@dataclass(frozen=True)
class ModelView:
    """A model as anyone may see it: never its key, only whether it has one."""

    id: str
    name: str
    kind: str
    endpoint_model: str
    base_url: str | None
    owner: Literal["platform", "you"]
    has_api_key: bool
    price_per_question: int
    price_per_1k_tokens: int
    status: ModelStatus
    formats: list[str]  # the benchmark formats it can answer, sorted
    # A Trained model's job (its lineage: base model, dataset, hyperparameters); else None.
    training_job_id: str | None = None
    # Its call parameters (max_tokens, timeout_s, seed): a PATCH replaces them whole, so they
    # must be readable first. Nothing secret is ever among them (`_checked_params`).
    params: dict[str, Any] = field(default_factory=dict)


# A model's place in the catalogue's order: platform models first (False), then by name and id.
CatalogueKey = tuple[bool, str, str]


def list_models(
    ctx: Context,
    benchmark_id: str | None = None,
    limit: int | None = None,
    after: CatalogueKey | None = None,
) -> list[ModelView]:
    """Platform models and the acting user's own, platform first, then by name; `limit` of
    them (all when None) after the one keyed `after` when given.

    Args:
        ctx: The acting principal's unit of work.
        benchmark_id: Only the models that can answer this benchmark's questions.
        limit: At most this many (1..MAX_LIST).
        after: The key (`catalogue_key`) of the last model a previous page showed.

    Raises:
        PermissionDenied: the token lacks the read scope.
        NotFound: `benchmark_id` names no benchmark the principal may see.
        InvalidInput: limit outside 1..MAX_LIST.
    """
    access.require(ctx, Action.MODEL_LIST)
    if limit is not None:
        check_window(limit, 0, MAX_LIST)
    query = select(Model).where(
        Model.deleted_at.is_(None),
        or_(Model.owner_id.is_(None), Model.owner_id == ctx.principal.user_id),
    )
    if benchmark_id is not None:
        fmt = access.require_benchmark(ctx, benchmark_id, Action.BENCHMARK_READ).format
        query = query.where(_answering(fmt))
    if after is not None:
        query = query.where(_after(after))
    query = query.order_by(Model.owner_id.is_not(None), Model.name, Model.id).limit(limit)
    return [view(row) for row in ctx.session.scalars(query)]


def catalogue_key(model: ModelView) -> CatalogueKey:
    """Where `model` stands in `list_models`' order."""
    return model.owner == "you", model.name, model.id


def _after(key: CatalogueKey) -> ColumnElement[bool]:
    mine, name, model_id = key
    later = or_(Model.name > name, and_(Model.name == name, Model.id > model_id))
    if mine:
        return and_(Model.owner_id.is_not(None), later)
    return or_(Model.owner_id.is_not(None), and_(Model.owner_id.is_(None), later))


def _answering(fmt: str) -> ColumnElement[bool]:
    """`_model_specs.answerable_formats(row)` holds `fmt`, in SQL, so that a page of the
    catalogue is a page of the models that can answer."""
    baselines = sorted(name for name, formats in builtin.FORMATS.items() if fmt in formats)
    readers = Model.kind != "builtin" if fmt in _model_specs.READER_FORMATS else false()
    return or_(and_(Model.kind == "builtin", Model.endpoint_model.in_(baselines)), readers)


def get_model(ctx: Context, model_id: str) -> ModelView:
    """One model the principal may use.

    Raises:
        NotFound: missing, deleted, or another user's.
    """
    access.require(ctx, Action.MODEL_LIST)
    return view(_model_specs.usable_model(ctx, model_id))


def create_model(ctx: Context, data: ModelIn | dict[str, Any]) -> ModelView:
    """Register one of the acting user's own model endpoints (price 0: the user's key pays).

    Raises:
        PermissionDenied: the token lacks the runs scope.
        InvalidInput: bad fields, a kind users may not register, or a refused address.
    """
    access.require(ctx, Action.MODEL_MANAGE)
    spec = parse(ModelIn, data)
    if spec.kind not in USER_KINDS:
        raise invalid(["kind"], f"users may register {' or '.join(USER_KINDS)} models")
    problems = _Problems()
    problems.check(partial(_require_own_name, ctx, spec.name))
    row = _insert(ctx, spec, ctx.principal.user_id, problems)
    audit.record(
        ctx, audit.AuditAction.MODEL_CREATE, "model", row.id, kind=row.kind, base_url=row.base_url
    )
    return view(row)


def create_platform_model(ctx: Context, data: PlatformModelIn | dict[str, Any]) -> ModelView:
    """Add a model offered to everyone, with its price (admins and the operator).

    Raises:
        PermissionDenied: not an admin.
        InvalidInput: bad fields or address.
    """
    access.require(ctx, Action.ADMIN_SETTINGS)
    row = _insert(ctx, parse(PlatformModelIn, data), owner_id=None)
    audit.record(ctx, audit.AuditAction.MODEL_CREATE_PLATFORM, "model", row.id, kind=row.kind)
    return view(row)


def update_model(ctx: Context, model_id: str, data: ModelChange | dict[str, Any]) -> ModelView:
    """Rename, rotate the key, or change parameters of one of the user's own models.

    Raises:
        NotFound: not one of the user's models.
        PermissionDenied: the token lacks the runs scope.
        InvalidInput: bad fields.
        Conflict: the change changes nothing (no field given).
    """
    access.require(ctx, Action.MODEL_MANAGE)
    change = parse(ModelChange, data)
    row = _model_specs.usable_model(ctx, model_id)
    if row.owner_id is None:
        raise NotFound("No such model among yours.", {"id": model_id})
    if change == ModelChange():
        raise Conflict("The change changes nothing.", {"id": model_id})
    problems, params = _Problems(), None
    if change.name is not None:
        problems.check(partial(_require_own_name, ctx, change.name))
    if change.params is not None:
        params = problems.check(partial(_checked_params, change.params, row.kind))
    if row.kind == "anthropic" and change.api_key == "":
        problems.errors.append({"loc": ["api_key"], "msg": NEEDS_KEY})
    problems.refuse_any()
    if change.name is not None:
        row.name = change.name
    if change.api_key is not None:
        row.api_key_enc = _keyring.encrypt(ctx, change.api_key) if change.api_key else None
    if params is not None:
        row.params = params
    row.updated_at = ctx.now()
    fields = sorted(name for name, value in change.model_dump().items() if value is not None)
    audit.record(ctx, audit.AuditAction.MODEL_UPDATE, "model", row.id, fields=fields)
    return view(row)


def delete_model(ctx: Context, model_id: str) -> None:
    """Remove one of the user's models from the catalogue (web app or CLI only).

    Raises:
        NotFound: not one of the user's models.
        PermissionDenied: a token or the agent asked.
    """
    access.require(ctx, Action.MODEL_DELETE)
    row = _model_specs.usable_model(ctx, model_id)
    if row.owner_id is None:
        raise NotFound("No such model among yours.", {"id": model_id})
    row.deleted_at = row.updated_at = ctx.now()
    audit.record(ctx, audit.AuditAction.MODEL_DELETE, "model", row.id)


def _require_own_name(ctx: Context, name: str) -> None:
    """A user's model never takes a platform model's name: the catalogue would list two models
    of one name, a free baseline and a paid endpoint, and whoever picks one by name (the
    agent does) could take either.

    Raises:
        InvalidInput: the name is a platform model's, whatever its case.
    """
    if is_platform_name(ctx, name):
        raise invalid(["name"], "is the name of a platform model; choose another")


def is_platform_name(ctx: Context, name: str) -> bool:
    """Whether `name` is a live platform model's, whatever its case."""
    query = select(Model.name).where(Model.owner_id.is_(None), Model.deleted_at.is_(None))
    return name.casefold() in {platform.casefold() for platform in ctx.session.scalars(query)}


_T = TypeVar("_T")


@dataclass
class _Problems:
    """The broken rules of one request, gathered so that its refusal lists each of them (a
    bad address and a bad parameter came back one refusal at a time)."""

    errors: list[dict[str, Any]] = field(default_factory=list)

    def check(self, rule: Callable[[], _T]) -> _T | None:
        """What `rule` returns, or None with its problems noted."""
        try:
            return rule()
        except InvalidInput as refused:
            self.errors.extend(refused.errors)
            return None

    def refuse_any(self) -> None:
        """Refuse the request when a rule was broken.

        Raises:
            InvalidInput: with every problem noted.
        """
        if self.errors:
            raise invalid_all(self.errors)


def _insert(
    ctx: Context, spec: ModelIn, owner_id: str | None, problems: _Problems | None = None
) -> Model:
    problems = problems or _Problems()
    base_url = problems.check(partial(_checked_url, ctx, spec)) if spec.kind in USER_KINDS else None
    if spec.kind in _model_specs.LOCAL_KINDS:
        problems.check(partial(_check_local_path, spec))
    params = problems.check(partial(_checked_params, spec.params, spec.kind))
    if spec.kind == "anthropic" and not spec.api_key:
        problems.errors.append({"loc": ["api_key"], "msg": NEEDS_KEY})
    problems.refuse_any()
    now = ctx.now()
    row = Model(
        id=new_id("mdl"),
        owner_id=owner_id,
        name=spec.name,
        kind=spec.kind,
        endpoint_model=spec.endpoint_model,
        base_url=base_url,
        api_key_enc=_keyring.encrypt(ctx, spec.api_key) if spec.api_key else None,
        params=params,
        # Only a platform model has a price: a user's own key pays for theirs.
        price_per_question=spec.price_per_question if isinstance(spec, PlatformModelIn) else 0,
        price_per_1k_tokens=spec.price_per_1k_tokens if isinstance(spec, PlatformModelIn) else 0,
        status=ModelStatus.AVAILABLE,
        created_at=now,
        updated_at=now,
    )
    ctx.session.add(row)
    ctx.session.flush()
    return row


def _checked_url(ctx: Context, spec: ModelIn) -> str | None:
    if spec.kind == "anthropic" and not spec.base_url:
        return None
    if not spec.base_url:
        raise invalid(["base_url"], "an OpenAI-compatible model needs its endpoint's base URL")
    if "?" in spec.base_url or "#" in spec.base_url:
        # The adapters append paths (/chat/completions): after a query or fragment they break.
        raise invalid(["base_url"], "must have no query (?…) or fragment (#…)")
    try:
        check_endpoint(spec.base_url, _model_specs.allowlist(ctx))
    except FatalModelError as exc:
        raise invalid(["base_url"], str(exc)) from None
    return spec.base_url.rstrip("/")


def _check_local_path(spec: ModelIn) -> None:
    """An operator's local model must point at weights that exist: a `.gguf` file, or a
    Hugging Face folder with a config.json and safetensors weights whose headers read."""
    if spec.kind == "local_gguf" and spec.endpoint_model == SMOLLM2:
        return
    path = Path(spec.endpoint_model)
    if spec.kind == "local_gguf" and not (path.suffix == ".gguf" and path.is_file()):
        raise invalid(["endpoint_model"], "must be the path of a .gguf file on this server")
    if spec.kind == "local_hf" and not (
        (path / "config.json").is_file() and any(path.glob("*.safetensors"))
    ):
        raise invalid(
            ["endpoint_model"],
            "must be a Hugging Face model folder on this server with config.json and "
            "*.safetensors weights",
        )
    # Every user's training catalogue reads these headers: refuse a damaged file or folder
    # here, where the operator sees why, rather than list a model nobody can train or run.
    if spec.kind == "local_gguf":
        problem = unreadable_gguf(path)
    else:
        problem = unreadable_folder(path)
        problem = problem and f"not a readable model folder: {problem}"
    if problem:
        raise invalid(["endpoint_model"], f"is {problem}")


# A seed is a signed 32-bit integer, as providers take it (and as a run's settings bound it).
PARAM_LIMITS = {"max_tokens": (1, 32768), "timeout_s": (1, 600), "seed": (0, 2**31 - 1)}


def _checked_params(params: dict[str, Any], kind: str) -> dict[str, Any]:
    unknown = sorted(set(params) - set(PARAM_LIMITS) - {"letter_logprobs"})
    if unknown:
        raise invalid(["params", unknown[0]], "unknown parameter")
    if kind == "anthropic" and params.get("seed") is not None:
        # The Messages API has no seed: saved, it was never sent, and runs meant to be seeded
        # were not (a run's own seed is refused the same way, at the estimate).
        raise invalid(["params", "seed"], "Anthropic models take no seed")
    for name, (low, high) in PARAM_LIMITS.items():
        value = params.get(name)
        # bool is an int to Python, but `true` is no token count: providers refuse it.
        whole = isinstance(value, int) and not isinstance(value, bool)
        if value is not None and (not whole or not low <= value <= high):
            raise invalid(["params", name], f"must be a whole number from {low} to {high}")
    if not isinstance(params.get("letter_logprobs", False), bool):
        raise invalid(["params", "letter_logprobs"], "must be true or false")
    return dict(params)


def view(row: Model) -> ModelView:
    """The public shape of a model row."""
    return ModelView(
        row.id,
        row.name,
        row.kind,
        row.endpoint_model,
        row.base_url,
        "platform" if row.owner_id is None else "you",
        row.api_key_enc is not None,
        row.price_per_question,
        row.price_per_1k_tokens,
        ModelStatus(row.status),
        sorted(_model_specs.answerable_formats(row)),
        row.training_job_id,
        dict(row.params),
    )


SMOLLM2 = "smollm2"


def register_local_models(ctx: Context) -> ModelView | None:
    """Offer the bundled SmolLM2 model to everyone when its package is installed (idempotent).

    Called by the operator's commands at start-up, so a new user can run a real language model
    with no network at all.
    """
    access.require(ctx, Action.ADMIN_SETTINGS)
    if smollm2_path() is None:
        return None
    existing = ctx.session.scalar(
        select(Model).where(
            Model.owner_id.is_(None), Model.kind == "local_gguf", Model.endpoint_model == SMOLLM2
        )
    )
    if existing is not None:
        return view(existing)
    spec = PlatformModelIn(
        name="SmolLM2-135M-Instruct (local)", kind="local_gguf", endpoint_model=SMOLLM2
    )
    row = _insert(ctx, spec, owner_id=None)
    audit.record(ctx, audit.AuditAction.MODEL_CREATE_PLATFORM, "model", row.id, kind=row.kind)
    return view(row)
