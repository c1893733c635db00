"""The AI judge of a benchmark: set up by its owner (web app or CLI only), paid by their key."""

from __future__ import annotations

from dataclasses import dataclass

from benchgen.core.context import Context
from benchgen.core.errors import Conflict, NotFound, PermissionDenied, invalid
from benchgen.core.permissions import Action
from benchgen.core.text import require_line
from benchgen.db.tables import Benchmark, Judge
from benchgen.evals.netguard import check_endpoint
from benchgen.evals.types import FatalModelError, ModelSpec
from benchgen.services import _keyring, _model_specs, access, audit
from benchgen.services.benchmarks import scoring

JUDGE_KINDS = ("openai_compat", "anthropic")


@dataclass(frozen=True)
class JudgeView:
    """The judge as its owner sees it: never the key."""

    benchmark_id: str
    kind: str
    endpoint_model: str
    base_url: str | None
    has_api_key: bool
    allow_others: bool


def _checked_key(api_key: str | None) -> str | None:
    """The key as typed, without the blanks around a paste (None when there is none).

    Raises:
        InvalidInput: a key no request header can carry (loc `["api_key"]`).
    """
    key = (api_key or "").strip()
    problem = _model_specs.key_problem(key) if key else ""
    if problem:
        raise invalid(["api_key"], problem)
    return key or None


def set_judge(
    ctx: Context,
    benchmark_id: str,
    kind: str,
    endpoint_model: str,
    base_url: str | None,
    api_key: str | None,
    allow_others: bool = False,
    keep_key: bool = False,
) -> JudgeView:
    """Set up (or replace) the judge and score the benchmark's runs with it from now on.
    With `keep_key` and no `api_key`, the saved key stays (for the same kind and address).

    Raises:
        NotFound / PermissionDenied: not the owner, or a token or the agent asked.
        InvalidInput: a qa benchmark is needed; bad kind, model name or address; a saved key
            kept for another kind or address.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.JUDGE_CONFIGURE)
    if kind not in JUDGE_KINDS:
        raise invalid(["kind"], f"choose one of {', '.join(JUDGE_KINDS)}")
    if not 1 <= len(endpoint_model.strip()) <= 500:
        raise invalid(["model"], "name the judge model (1 to 500 characters)")
    endpoint_model = require_line(endpoint_model, ["model"])
    # Stored as checked: a space kept around it would end up inside every request line.
    base_url = (base_url or "").strip() or None
    if base_url:
        try:
            check_endpoint(base_url, _model_specs.allowlist(ctx))
        except FatalModelError as exc:
            raise invalid(["base_url"], str(exc)) from None
    elif kind == "openai_compat":
        raise invalid(["base_url"], "an OpenAI-compatible judge needs its endpoint's base URL")
    api_key = _checked_key(api_key)
    settings = scoring.validated(benchmark.format, {"method": "judge"})
    judge = ctx.session.get(Judge, benchmark.id) or Judge(benchmark_id=benchmark.id)
    address = base_url.rstrip("/") if base_url else None
    kept = judge.api_key_enc if keep_key and not api_key else None
    # A saved key goes only where its owner typed it for: a judge moved to another address or
    # kind needs the key typed again, so a changed endpoint can never collect the old one.
    if kept and (judge.kind, judge.base_url) != (kind, address):
        raise invalid(["api_key"], "type the key again: the judge's kind or address changed")
    judge.kind, judge.endpoint_model = kind, endpoint_model.strip()
    judge.base_url = address
    judge.api_key_enc = _keyring.encrypt(ctx, api_key) if api_key else kept
    judge.allow_others, judge.updated_at = allow_others, ctx.now()
    ctx.session.add(judge)
    benchmark.scoring, benchmark.updated_at = settings, ctx.now()
    audit.record(
        ctx,
        audit.AuditAction.JUDGE_SET,
        "benchmark",
        benchmark.id,
        kind=kind,
        model=judge.endpoint_model,
        allow_others=allow_others,
    )
    return _view(judge)


def get_judge(ctx: Context, benchmark_id: str) -> JudgeView:
    """The benchmark's judge (owner only).

    Raises:
        NotFound: no judge, or not the owner's benchmark.
    """
    benchmark = access.require_benchmark(ctx, benchmark_id, Action.JUDGE_CONFIGURE)
    judge = ctx.session.get(Judge, benchmark.id)
    if judge is None:
        raise NotFound("This benchmark has no AI judge.", {"id": benchmark.id})
    return _view(judge)


def require_usable(ctx: Context, benchmark: Benchmark) -> None:
    """Refuse unless the benchmark's judge is set up and the acting principal may have it judge
    (for a run it launches, or answers judged again); the caller has checked the action itself.

    Raises:
        Conflict: the benchmark has no judge.
        PermissionDenied: the judge is not open to people outside the benchmark's team.
    """
    judge = ctx.session.get(Judge, benchmark.id)
    if judge is None:
        raise Conflict(
            "This benchmark has no AI judge set up; its owner sets one up on its judge "
            "settings page.",
            {"page": f"/benchmarks/{benchmark.id}/settings/judge"},
        )
    # The owner's key pays for judging: only the owner's team may use it unless they opened it.
    if not judge.allow_others and not access.can(ctx, Action.BENCHMARK_READ_KEY, benchmark):
        raise PermissionDenied(
            "This benchmark's AI judge is paid by its owner and is not open to other users."
        )


def judge_spec(ctx: Context, benchmark_id: str) -> ModelSpec | None:
    """How to call the benchmark's judge, key decrypted (for the run executor only)."""
    judge = ctx.session.get(Judge, benchmark_id)
    if judge is None:
        return None
    key = _keyring.decrypt(ctx, judge.api_key_enc) if judge.api_key_enc else None
    base_url = judge.base_url or (_model_specs.ANTHROPIC_URL if judge.kind == "anthropic" else None)
    params = {"max_tokens": 512}
    allowlist = _model_specs.allowlist(ctx)  # checked again at each connection
    return ModelSpec(judge.kind, judge.endpoint_model, base_url, key, params, allowlist)


def _view(judge: Judge) -> JudgeView:
    return JudgeView(
        judge.benchmark_id,
        judge.kind,
        judge.endpoint_model,
        judge.base_url,
        judge.api_key_enc is not None,
        judge.allow_others,
    )
