"""Model pages: the catalogue by source (Trained models with their lineage), endpoint models,
key rotation, deletion."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from benchgen.core.errors import InvalidInput
from benchgen.services import models
from benchgen.services.models import USER_KINDS, ModelView
from benchgen.services.training import jobs
from benchgen.web.confirmations import confirmed
from benchgen.web.places import plain
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import redirect, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
KIND_LABELS = {"openai_compat": "OpenAI-compatible endpoint", "anthropic": "Anthropic"}
# Every kind a page may show, in words (the new-model form offers only KIND_LABELS).
KIND_NAMES = {
    **KIND_LABELS,
    "builtin": "Baseline",
    "local_gguf": "Local (GGUF)",
    "local_hf": "Local (Hugging Face)",
}
SOURCES = (("platform", "Platform models"), ("you", "My models"))
# Lineage is looked up among this many of my newest training jobs; an older or deleted job's
# Trained model shows without it.
LINEAGE_JOBS = 200
NEW_FIELDS = ("name", "kind", "base_url", "endpoint_model", "api_key")


@router.get("/models", name="models")
def model_list(request: Request, ctx: WebContext) -> Response:
    """The catalogue: platform models for everyone, then mine, then the models I trained with
    their base model, dataset and job."""
    found = models.list_models(ctx)
    groups = [
        (source, label, [m for m in found if m.owner == source and m.training_job_id is None])
        for source, label in SOURCES
    ]
    trained = [m for m in found if m.training_job_id is not None]
    lineage = {}
    if trained:
        made = jobs.list_training_jobs(ctx, LINEAGE_JOBS)
        lineage = {job.trained_model_id: job for job in made if job.trained_model_id}
    return render(
        request,
        "models/list.html",
        groups=groups,
        trained=trained,
        lineage=lineage,
        kind_names=KIND_NAMES,
    )


@router.get("/models/new", name="model_new")
def model_new(request: Request, ctx: WebContext) -> Response:
    """The form to add an endpoint model."""
    return _new_form(request, {"kind": USER_KINDS[0]}, {})


@router.post("/models/new", name="model_new_submit")
def model_new_submit(
    request: Request,
    ctx: WebContext,
    # No length limits on what is typed or pasted: a refused field would lose the whole form
    # to an error page; the service checks each and the form shows why beside it.
    name: Annotated[str, Form()] = "",
    kind: Annotated[str, Form(max_length=40)] = USER_KINDS[0],
    base_url: Annotated[str, Form()] = "",
    endpoint_model: Annotated[str, Form()] = "",
    api_key: Annotated[str, Form()] = "",
) -> Response:
    """Register the endpoint; problems (a private address, say) are shown beside the fields."""
    typed = {"name": name, "kind": kind, "base_url": base_url, "endpoint_model": endpoint_model}
    data: dict[str, Any] = {
        **typed,
        "base_url": base_url.strip() or None,
        "api_key": api_key.strip() or None,
    }
    try:
        made = models.create_model(ctx, data)
    except InvalidInput as exc:
        # The key is never written back into the page, even when the form is refused: the
        # page asks for it again instead.
        problems = problems_by_field(exc, NEW_FIELDS)
        return _new_form(request, typed, problems, 422, key_dropped=bool(api_key.strip()))
    return redirect(request, "model", flash=f"Added {made.name}.", model_id=made.id)


def _new_form(
    request: Request,
    typed: dict[str, str],
    problems: dict[str, str],
    status_code: int = 200,
    *,
    key_dropped: bool = False,
) -> Response:
    return render(
        request,
        "models/new.html",
        status_code=status_code,
        form={name: typed.get(name, "") for name in NEW_FIELDS if name != "api_key"},
        problems=problems,
        kinds=KIND_LABELS,
        key_dropped=key_dropped,
    )


@router.get("/models/{model_id}", name="model")
def model_page(request: Request, ctx: WebContext, model_id: str) -> Response:
    """One model: its details; for my own, rotating its key and deleting it."""
    return _model_page(request, models.get_model(ctx, model_id), {})


def _model_page(
    request: Request, model: ModelView, problems: dict[str, str], status_code: int = 200
) -> Response:
    return render(
        request,
        "models/model.html",
        status_code=status_code,
        model=model,
        kind_label=KIND_NAMES.get(model.kind, model.kind),
        confirm_text=f"delete {model.name}",
        problems=problems,
    )


@router.post("/models/{model_id}/key", name="model_rotate_key")
def model_rotate_key(
    request: Request,
    ctx: WebContext,
    model_id: str,
    api_key: Annotated[str, Form()] = "",  # checked by the service, refused beside the field
) -> Response:
    """Replace the model's API key (the old one is gone; the new one is never shown)."""
    if not api_key.strip():
        problem = {"api_key": "enter the new key"}
        return _model_page(request, models.get_model(ctx, model_id), problem, 422)
    try:
        models.update_model(ctx, model_id, {"api_key": api_key.strip()})
    except InvalidInput as exc:
        problems = problems_by_field(exc, ("api_key",))
        return _model_page(request, models.get_model(ctx, model_id), problems, 422)
    return redirect(request, "model", flash="The key was replaced.", model_id=model_id)


@router.post("/models/{model_id}/delete", name="model_delete")
def model_delete(
    request: Request,
    ctx: WebContext,
    model_id: str,
    confirm: Annotated[str, Form(max_length=300)] = "",
) -> Response:
    """Remove one of my models from the catalogue, once its name is typed to confirm."""
    model = models.get_model(ctx, model_id)
    # The page's script only disables the button; the typed words are checked here too.
    if not confirmed(confirm, f"delete {model.name}"):
        problem = {"confirm": f"type “delete {model.name}” to confirm"}
        return _model_page(request, model, problem, 422)
    models.delete_model(ctx, model_id)
    return redirect(request, "models", flash=f"Deleted {model.name}.")


def problems_by_field(exc: InvalidInput, fields: tuple[str, ...]) -> dict[str, str]:
    """Each problem under the form field it concerns ("" for those of no field)."""
    problems: dict[str, str] = {}
    for error in exc.errors:
        loc = [part for part in error.get("loc", []) if isinstance(part, str)]
        where = next((part for part in loc if part in fields), "")
        problems.setdefault(where, plain(str(error.get("msg", ""))))
    return problems
