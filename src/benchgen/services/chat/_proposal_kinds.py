"""Each kind of agent proposal: check and canonicalise its arguments, preview it, carry it out.

`prepare` and `perform` check each kind's permissions but not the approval: only `proposals` calls
them, after binding the approval to its user and turn. A bundle change is first checked in a read
(`check`, `check_perform`), its programs run with no unit of work open, and what they found is
handed to `prepare` or `perform`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func, select

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, invalid
from benchgen.core.permissions import Action
from benchgen.db.tables import Question
from benchgen.services import access
from benchgen.services.benchmarks import _bundle_versions, bundles, lifecycle, questions
from benchgen.services.chat import _bundle_kind, _run_kind, _training_kind, previews
from benchgen.services.chat._versions import hold_version
from benchgen.services.specs import BenchmarkChange, BenchmarkIn, parse

# Everything the agent may ask to do. A13 actions (delete, unpublish, judge, tokens…) are not
# here and never can be: there is no kind for them, so no proposal for them can exist.
KINDS = (
    "create_benchmark",
    "edit_benchmark",
    "publish_benchmark",
    "start_run",
    "change_bundle",
    "start_training",
)

_Strict = ConfigDict(extra="forbid", str_strip_whitespace=True)
# What an edit's canonical arguments bind beside the change asked for (see `_prepare_edit`).
EDIT_BOUND = ("version", "before")


class EditArgs(BaseModel):
    """Arguments of an `edit_benchmark` proposal."""

    model_config = _Strict

    benchmark_id: str = Field(max_length=40)
    change: BenchmarkChange


class PublishArgs(BaseModel):
    """Arguments of a `publish_benchmark` proposal."""

    model_config = _Strict

    benchmark_id: str = Field(max_length=40)


@dataclass(frozen=True)
class Prepared:
    """Canonical arguments (exactly what will run) and the preview rendered from them."""

    arguments: dict[str, Any]
    preview: dict[str, Any]


def canonical_json(arguments: dict[str, Any]) -> str:
    """The one serialisation that is hashed: sorted keys, no spaces, UTF-8 text kept."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def hash_arguments(arguments: dict[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of `arguments`: the preview hash approval carries."""
    return hashlib.sha256(canonical_json(arguments).encode()).hexdigest()


def check(ctx: Context, kind: str, arguments: dict[str, Any]) -> bundles.BundleCheck | None:
    """The checks of `prepare` that come before a bundle change's programs, in a unit of work
    that only reads, and the bundle waiting for them; None for other kinds (nothing is slow).

    Raises:
        InvalidInput: unknown kind or bad arguments.
        NotFound / PermissionDenied / Conflict: see `_bundle_kind.check`.
    """
    if kind not in KINDS:
        raise invalid(["kind"], f"unknown proposal kind; choose one of {', '.join(KINDS)}")
    return _bundle_kind.check(ctx, arguments) if kind == "change_bundle" else None


def prepare(
    ctx: Context,
    kind: str,
    arguments: dict[str, Any],
    agent_pick: bool,
    bundle: bundles.Checked | None = None,
) -> Prepared:
    """Validate `arguments` for `kind` with the services' own rules, applying nothing. A
    bundle change needs `bundle`, its programs already run (`check`).

    Raises:
        InvalidInput: unknown kind, bad arguments, or `agent_pick` on anything but a run.
        NotFound: the benchmark, model or dataset is not visible to the principal.
        PermissionDenied: the principal may not do this now (scope, role, deployment switch).
        Frozen: an edit touches frozen questions.
        Conflict: the edit changes nothing, the benchmark is already published, or the scratch
            copy changed while its programs ran.
        InsufficientCredits: a training plan the balance cannot cover.
        ValueError: a bundle change without `bundle` (a bug in the caller).
    """
    if kind not in KINDS:
        raise invalid(["kind"], f"unknown proposal kind; choose one of {', '.join(KINDS)}")
    if agent_pick and kind != "start_run":
        raise invalid(["agent_pick"], "only a run proposal has a model choice to mark")
    if kind == "start_run":
        prepared = Prepared(*_run_kind.prepare(ctx, arguments, agent_pick))
    elif kind == "start_training":
        prepared = Prepared(*_training_kind.prepare(ctx, arguments))
    elif kind == "change_bundle":
        prepared = Prepared(*_bundle_kind.prepare(ctx, arguments, _ran(bundle)))
    else:
        prepared = _PREPARERS[kind](ctx, arguments)
    # Kept as parsed back from the canonical text, so what is stored is exactly what is hashed.
    return Prepared(json.loads(canonical_json(prepared.arguments)), prepared.preview)


def _prepare_create(ctx: Context, arguments: dict[str, Any]) -> Prepared:
    access.require(ctx, Action.BENCHMARK_CREATE)
    spec = parse(BenchmarkIn, arguments)
    # The check create_benchmark applies, now: the user never approves one it would refuse.
    checked = lifecycle.check_new(spec)
    canonical = {**spec.model_dump(), "questions": _question_args(checked.questions)}
    shown = [question.as_dict() for question in checked.questions]
    preview = {
        "title": spec.title,
        "format": spec.format,
        "description": spec.description,
        "question_count": len(shown),
        "questions": shown,
        "warnings": checked.warnings,
        "text": previews.create_text(canonical, shown, checked.warnings),
    }
    return Prepared(canonical, preview)


def _prepare_edit(ctx: Context, arguments: dict[str, Any]) -> Prepared:
    spec = parse(EditArgs, arguments)
    row = access.require_benchmark(ctx, spec.benchmark_id, Action.BENCHMARK_EDIT)
    change = spec.change.model_dump()
    if spec.change.questions is not None:
        checked = questions.validate_questions(row.format, spec.change.questions)
        change["questions"] = _question_args(checked.questions)
    # The diff is computed from the canonical change itself, so it shows what will be applied.
    diff = lifecycle.preview_benchmark_change(ctx, row.id, change)
    if not diff.metadata and diff.questions is None:
        raise Conflict("The change changes nothing, so there is nothing to approve.")
    preview = {
        "benchmark_id": row.id,
        "title": row.title,
        "metadata": diff.metadata,
        "questions": diff.questions,
        "version_before": diff.version_before,
        "version_after": diff.version_after,
        "warnings": diff.warnings,
        "text": previews.edit_text(row.title, diff),
    }
    # The values the diff shows as "before" are bound too: a title or description changed
    # since (no new version) would be overwritten unseen.
    before = {name: values["before"] for name, values in diff.metadata.items()}
    bound = dict(zip(EDIT_BOUND, (row.version, before), strict=True))
    return Prepared({"benchmark_id": row.id, "change": change, **bound}, preview)


def _prepare_publish(ctx: Context, arguments: dict[str, Any]) -> Prepared:
    spec = parse(PublishArgs, arguments)
    row = access.require_benchmark(ctx, spec.benchmark_id, Action.BENCHMARK_PUBLISH)
    if row.visibility == "published":
        raise Conflict("This benchmark is already published.", {"id": row.id})
    shown: dict[str, Any]
    if row.format == "custom":
        # Its tasks are in its bundle, not in questions: "0 questions" misstated what went public.
        version = _bundle_versions.version_row(ctx, row.id, None).version
        text = previews.publish_custom_text(row.title, row.id, version)
        shown = {"bundle_version": version, "text": text}
    else:
        count = int(
            ctx.session.scalar(select(func.count()).where(Question.benchmark_id == row.id)) or 0
        )
        shown = {"question_count": count, "text": previews.publish_text(row.title, row.id, count)}
    preview = {"benchmark_id": row.id, "title": row.title, **shown}
    # The title is bound too: a rename is no new version, yet the preview named the benchmark.
    bound = {"benchmark_id": row.id, "version": row.version, "title": row.title}
    return Prepared(bound, preview)


def _question_args(checked: list[questions.Canonical]) -> list[dict[str, Any]]:
    """Validated questions back in the input shape, so running them re-validates to the same."""
    return [
        {
            "prompt": question.prompt,
            "choices": list(question.choices) if question.choices is not None else None,
            "answer": question.answers[0]
            if question.choices is not None
            else list(question.answers),
            "tags": list(question.tags),
            "metadata": json.loads(question.metadata),
        }
        for question in checked
    ]


def check_perform(ctx: Context, kind: str, arguments: dict[str, Any]) -> bundles.BundleCheck | None:
    """The checks of `perform` that come before a bundle change's programs, in a unit of work
    that only reads, and the bundle waiting for them; None for other kinds (nothing is slow).

    Raises:
        NotFound / PermissionDenied / Conflict: see `_bundle_kind.check_perform`.
    """
    return _bundle_kind.check_perform(ctx, arguments) if kind == "change_bundle" else None


def perform(
    ctx: Context, kind: str, arguments: dict[str, Any], bundle: bundles.Checked | None = None
) -> dict[str, Any]:
    """Carry out exactly `arguments` through the normal service function, which checks every
    rule again (permissions, switches, rate limits, credits, freezing, the target exists). A
    bundle change needs `bundle`, its programs already run (`check_perform`).

    Raises:
        BenchGenError: whatever that service function raises; see its own Raises.
        Conflict: the benchmark (or the scratch copy) changed after the preview, or a run or
            training job would cost more than shown.
        ValueError: a bundle change without `bundle` (a bug in the caller).
    """
    if kind == "change_bundle":
        return _bundle_kind.perform(ctx, arguments, _ran(bundle))
    return _PERFORMERS[kind](ctx, arguments)


def _ran(bundle: bundles.Checked | None) -> bundles.Checked:
    # A bundle's programs never run inside the write that stores a proposal or carries it out:
    # on SQLite that would hold every other write on the server for as long as they take.
    if bundle is None:
        raise ValueError("A bundle change is stored only with its programs already run.")
    return bundle


def _perform_create(ctx: Context, arguments: dict[str, Any]) -> dict[str, Any]:
    created = lifecycle.create_benchmark(ctx, arguments)
    return {"benchmark_id": created.benchmark.id, "warnings": created.warnings}


def _perform_edit(ctx: Context, arguments: dict[str, Any]) -> dict[str, Any]:
    hold_version(ctx, arguments, Action.BENCHMARK_EDIT)
    edited, _ = lifecycle.edit_benchmark(ctx, arguments["benchmark_id"], arguments["change"])
    return {"benchmark_id": edited.id, "version": edited.version}


def _perform_publish(ctx: Context, arguments: dict[str, Any]) -> dict[str, Any]:
    hold_version(ctx, arguments, Action.BENCHMARK_PUBLISH)
    published = lifecycle.publish_benchmark(ctx, arguments["benchmark_id"])
    return {"benchmark_id": published.id, "visibility": published.visibility}


_PREPARERS: dict[str, Callable[[Context, dict[str, Any]], Prepared]] = {
    "create_benchmark": _prepare_create,
    "edit_benchmark": _prepare_edit,
    "publish_benchmark": _prepare_publish,
}
_PERFORMERS: dict[str, Callable[[Context, dict[str, Any]], dict[str, Any]]] = {
    "create_benchmark": _perform_create,
    "edit_benchmark": _perform_edit,
    "publish_benchmark": _perform_publish,
    "start_run": _run_kind.perform,
    "start_training": _training_kind.perform,
}
