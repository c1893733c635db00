"""Response shapes: `TypedDict` mirrors of the server's OpenAPI schemas (tests/client pins them)."""

# No `from __future__ import annotations` here: on Python 3.11 a TypedDict with string
# annotations counts `NotRequired` keys as required at runtime (`__required_keys__`), and the
# test that checks these shapes against the OpenAPI document reads exactly that.

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

Format = Literal["qa", "mcq"]
TurnStatus = Literal[
    "completed", "awaiting_approval", "awaiting_choice", "stopped_at_cap", "running", "failed"
]
RunStatus = Literal["queued", "running", "completed", "failed", "cancelled"]
TrainingStatus = Literal["queued", "running", "completed", "failed", "cancelled"]
ModelStatus = Literal["available", "running", "unavailable"]


class Me(TypedDict):
    """The token's user, credit balance, scopes and expiry."""

    id: str
    email: str
    display_name: str
    is_admin: bool
    credits: int
    scopes: list[str]
    token_id: str | None
    token_expires_at: str | None


class LedgerLine(TypedDict):
    """One line of the credit ledger (grant, reservation, settlement, refund)."""

    id: str
    kind: str
    amount: int
    reference: str
    note: str
    door: str
    created_at: str


class Benchmark(TypedDict):
    """A benchmark as the token's user may see it."""

    id: str
    title: str
    description: str
    format: str
    visibility: str
    owner_id: str
    version: int
    question_count: int
    questions_frozen: bool
    created_door: str
    created_at: str
    updated_at: str
    published_at: str | None
    roles: list[str]
    can_see_key: bool


class Question(TypedDict):
    """A stored question; `answer` is None unless you own or collaborate on the benchmark."""

    position: int
    prompt: str
    # The server sends these every time, but its OpenAPI document marks them optional (they
    # have defaults there); the shape follows the document it is checked against.
    choices: NotRequired[dict[str, str] | None]
    answer: NotRequired[str | list[str] | None]
    tags: NotRequired[list[str]]


class CreatedBenchmark(TypedDict):
    """A new benchmark and the warnings found on the way (duplicates are not errors)."""

    benchmark: Benchmark
    warnings: list[dict[str, Any]]


class ChangePreview(TypedDict):
    """What a change does (or would do): metadata diffs, question diffs, versions, warnings."""

    benchmark_id: str
    metadata: dict[str, dict[str, str]]
    questions: dict[str, Any] | None
    version_before: int
    version_after: int
    warnings: list[dict[str, Any]]


class EditedBenchmark(TypedDict):
    """The changed benchmark and what the change did."""

    benchmark: Benchmark
    change: ChangePreview


class LeaderboardRow(TypedDict):
    """One ranked entry of a leaderboard."""

    rank: int
    run_id: str
    model_name: str
    submitted_by: str
    scores: dict[str, Any]
    score_edited: bool
    finished_at: str | None
    settings: str  # the run's settings that differ from the defaults, in words


class Leaderboard(TypedDict):
    """A phase's leaderboard: its columns (primary first) and ranked rows; each column's
    `titles` and `sorting` (`desc` or `asc`, as a custom benchmark's bundle sets them);
    `next_cursor` for the rows of the next page (the client follows it: None)."""

    benchmark_id: str
    phase_id: str
    columns: list[str]
    rows: list[LeaderboardRow]
    titles: dict[str, str]
    sorting: dict[str, str]
    next_cursor: NotRequired[str | None]


class Model(TypedDict):
    """A model you may run: a platform model or one of your own (never its key)."""

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
    formats: list[str]
    training_job_id: NotRequired[str | None]
    params: NotRequired[dict[str, Any]]


class Dataset(TypedDict):
    """One of your datasets: counts, a preview of its first rows. `token_estimate` is
    characters / 4; `size` and `sha256` are of the stored normalised JSON lines."""

    id: str
    name: str
    format: Literal["chat", "prompt_completion"]
    source_format: str
    row_count: int
    token_estimate: int
    size: int
    sha256: str
    preview: list[dict[str, Any]]
    created_at: str


class ComputePool(TypedDict):
    """A pool of compute offered for training: `cpu` or `gpu:<type>`, and its use now."""

    pool: str
    kind: str
    gpu_type: str | None
    total: int
    in_use: int
    free: int
    queued: int


class TrainingBase(TypedDict):
    """A model you may use, as a training base: whether it can be trained here, and why not."""

    id: str
    name: str
    kind: str
    trainable: bool
    reason: str
    param_count: int


class ComputePlan(TypedDict):
    """The compute a plan asks for and how it stands right now."""

    pool: str
    gpu_type: str | None
    count: int
    total: int
    free: int
    queued: int
    starts_now: bool
    availability: str


class TrainingPlan(TypedDict):
    """Everything to approve before a training job launches."""

    name: str
    job_type: str
    base_model_id: str
    base_model_name: str
    base_param_count: int
    dataset_id: str
    dataset_name: str
    dataset_rows: int
    dataset_tokens: int
    hyperparameters: dict[str, Any]
    total_steps: int
    compute: ComputePlan
    memory_estimate_mib: int
    memory_limit_mib: int
    estimated_seconds: int
    price_per_step: int
    estimated_credits: int
    balance: int
    affordable: bool


class TrainingJob(TypedDict):
    """One of your training jobs; `credits_charged` is settled when it ends, and
    `trained_model_id` is the Trained model it made."""

    id: str
    name: str
    status: TrainingStatus
    waiting_for: str
    job_type: str
    base_model_id: str
    base_model_name: str
    dataset_id: str
    dataset_name: str
    hyperparameters: dict[str, Any]
    compute_pool: str
    compute_count: int
    total_steps: int
    steps_done: int
    checkpoint_step: int
    last_loss: float | None
    estimated_credits: int
    credits_charged: int
    trained_model_id: str | None
    trained_model_name: str | None
    cancel_requested: bool
    peak_memory_mib: int
    error: str
    created_at: str
    started_at: str | None
    finished_at: str | None


class TrainingLogLine(TypedDict):
    """A line of a training job's log; a step's line carries its metrics."""

    id: int
    at: str
    line: str
    step: int | None
    loss: float | None
    learning_rate: float | None
    tokens_per_s: float | None


class Estimate(TypedDict):
    """The most a run would cost, in credits (reserved when it starts)."""

    benchmark_id: str
    model_id: str
    model_name: str
    question_count: int
    credits: int
    basis: str
    settings: str  # the settings that differ from the defaults, in words
    partial: bool  # a subset: never eligible for a leaderboard


class Run(TypedDict):
    """A run: status, progress, cost and aggregate scores (`summary["accuracy"]`, …)."""

    id: str
    benchmark_id: str
    phase_id: str
    model_id: str | None  # None for a submission to a custom benchmark: no model answered
    model_name: str
    status: RunStatus
    benchmark_version: int
    scoring: dict[str, Any]
    question_count: int
    done_count: int
    error_count: int
    estimated_cost: int
    cost: int | None
    judge_input_tokens: int
    judge_output_tokens: int
    input_tokens: int
    output_tokens: int
    summary: dict[str, Any]
    scores: dict[str, Any]
    score_edited: bool
    launched_by: str
    door: str
    error: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    detail_visible: bool
    settings: dict[str, Any]  # generation settings, samples, subset, prompt version
    partial: bool  # asked part of the benchmark (a subset or a retry): no leaderboard
    retry_of: str | None  # the run whose errored questions this one asked again


class TagDifference(TypedDict):
    """How two compared runs did on the paired questions with one tag."""

    tag: str
    n: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    only_a: int
    only_b: int


class PairedItem(TypedDict):
    """One question both compared runs answered, and how each did on it."""

    position: int
    prompt: str
    tags: list[str]
    outcome_a: str
    outcome_b: str
    category: Literal["both_right", "both_wrong", "only_a", "only_b"]


class Comparison(TypedDict):
    """Run B against run A on the questions both answered: accuracies, the difference B − A
    with its paired bootstrap interval (`ci_low`, `ci_high`), the exact McNemar `p_value` and
    the four counts, by tag and question by question (for the benchmark's team only)."""

    benchmark_id: str
    benchmark_version: int
    run_a: str
    run_b: str
    model_a: str
    model_b: str
    n: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    ci_low: float
    ci_high: float
    confidence: float
    resamples: int
    p_value: float
    both_right: int
    both_wrong: int
    only_a: int
    only_b: int
    unpaired_a: int
    unpaired_b: int
    edited_a: bool  # its official score was corrected by hand; the figures come from answers
    edited_b: bool
    tags: list[TagDifference]
    items: list[PairedItem]


class Bundle(TypedDict):
    """A custom benchmark's Codabench bundle: pages, phases and leaderboard columns for every
    reader (`competition`); `warnings`, `solutions` (each `{"index", "name", "ok", "scores",
    "error"}`) and `versions` only for its owner and collaborators (None for others)."""

    benchmark_id: str
    version: int
    filename: str
    sha256: str
    size: int
    docker_image: str | None
    pages: list[dict[str, str]]
    terms_html: str
    competition: dict[str, Any]
    warnings: list[dict[str, Any]] | None
    solutions: list[dict[str, Any]] | None
    versions: list[dict[str, Any]] | None
    uploaded_at: str


class LogLine(TypedDict):
    """One line of a run's log; pass the last `id` as `after` to follow a live run."""

    id: int
    at: str
    line: str


class Rescore(TypedDict):
    """What rescoring did (`applied`) or would do; `changes` only for the benchmark's team."""

    run_id: str
    applied: bool
    scoring: dict[str, Any]
    before: dict[str, Any]
    after: dict[str, Any]
    changed_count: int
    changes: list[dict[str, Any]]


class Rejudging(TypedDict):
    """Answers whose AI judging failed, handed back to the judge (`answers` of them)."""

    run_id: str
    answers: int


class Conversation(TypedDict):
    """A conversation with the agent, kept on the server."""

    id: str
    title: str
    created_at: str
    updated_at: str
    busy: bool
    turn_count: int


class Button(TypedDict):
    """A control shown with a reply: send `action` back verbatim with `send_message`."""

    label: str
    action: dict[str, Any]


class Proposal(TypedDict):
    """What the agent proposes, pending approval; `preview["text"]` is its plain rendering."""

    id: str
    kind: str
    preview: dict[str, Any]
    preview_hash: str
    expires_at: str
    status: str


class Turn(TypedDict):
    """One chat turn: `status` is `completed`, `awaiting_approval`, `awaiting_choice`,
    `stopped_at_cap`, `running` or `failed`."""

    turn_id: str
    conversation_id: str
    seq: int
    status: TurnStatus
    reply: str
    buttons: list[Button]
    proposal: Proposal | None
    notices: list[str]


class TurnRecord(Turn):
    """A turn in a transcript: also what was sent, the agent's tool calls, and when."""

    user_text: str
    action: dict[str, Any] | None
    tool_calls: list[dict[str, Any]]
    brain: str
    started_at: str
    finished_at: str | None


class Transcript(Conversation):
    """A conversation and its latest turns (a page; see `before`), oldest first."""

    turns: list[TurnRecord]


@dataclass(frozen=True)
class QuotaStatus:
    """The creation quota the server reported with the last benchmark creation or import.

    It comes from response headers, not a body, so it is a dataclass and not a mirrored shape.

    Attributes:
        limit: Creations allowed in the tighter rolling window.
        remaining: Creations left in that window.
        reset_at: When the window has room again (UTC).
    """

    limit: int
    remaining: int
    reset_at: datetime


class Scoring(TypedDict):
    """How a benchmark's future runs are scored: the method and every one of its options."""

    method: str
    options: dict[str, Any]


class Notifications(TypedDict):
    """Where my run notifications go; `webhook_secret` only in the answer that made it."""

    email_on_finish: bool
    webhook_url: str | None
    has_webhook_secret: bool
    webhook_secret: NotRequired[str | None]
    updated_at: NotRequired[str | None]
