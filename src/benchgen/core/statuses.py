"""The status vocabularies of runs, training jobs, jobs, chat turns, proposals and models, in one
place each."""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """A run's life: queued → running → completed | failed | cancelled."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


RUN_ACTIVE = frozenset({RunStatus.QUEUED, RunStatus.RUNNING})
RUN_FINAL = frozenset(RunStatus) - RUN_ACTIVE


class JobStatus(StrEnum):
    """A queued job's life in the job table (the truth whatever dispatches it)."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


class TrainingStatus(StrEnum):
    """A training job's life: queued → running → completed | failed | cancelled."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


TRAINING_ACTIVE = frozenset({TrainingStatus.QUEUED, TrainingStatus.RUNNING})
TRAINING_FINAL = frozenset(TrainingStatus) - TRAINING_ACTIVE


class TurnStatus(StrEnum):
    """How a chat turn stands: running, or how it ended."""

    RUNNING = "running"
    COMPLETED = "completed"
    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_CHOICE = "awaiting_choice"
    STOPPED_AT_CAP = "stopped_at_cap"
    FAILED = "failed"


class ProposalStatus(StrEnum):
    """A proposal's life: a draft while its turn runs, pending once shown, then decided."""

    DRAFT = "draft"
    PENDING = "pending"
    APPROVED = "approved"
    DECLINED = "declined"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"
    EXECUTED = "executed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class ModelStatus(StrEnum):
    """Whether a model can be run now."""

    AVAILABLE = "available"
    RUNNING = "running"
    UNAVAILABLE = "unavailable"
