"""Calls on training: the compute on offer, plans, launching, following and cancelling jobs."""

from __future__ import annotations

import time
from typing import Any, cast

from benchgen.client.connection import PAGE, Connection, segment
from benchgen.client.runs import FINAL_STATUSES
from benchgen.client.shapes import (
    ComputePool,
    TrainingBase,
    TrainingJob,
    TrainingLogLine,
    TrainingPlan,
)

_LOG_PAGE = 5000


class TrainingCalls(Connection):
    """Training jobs on your datasets, and the Trained models they make."""

    def compute(self) -> list[ComputePool]:
        """The compute pools offered for training and what is free right now (every page)."""
        return cast(list[ComputePool], list(self._pages("/compute", {}, PAGE)))

    def training_bases(self) -> list[TrainingBase]:
        """Every model you may use, with whether it can be trained here and why not (every
        page)."""
        return cast(list[TrainingBase], list(self._pages("/training-bases", {}, PAGE)))

    def plan_training(self, base_model_id: str, dataset_id: str, **plan: Any) -> TrainingPlan:
        """The full plan of a training job without launching it.

        Args:
            base_model_id: A trainable model's id (`mdl_…`).
            dataset_id: One of your datasets (`ds_…`).
            **plan: `job_type` ("lora" or "sft"), `hyperparameters` (a dict: epochs,
                learning_rate, batch_size, max_seq_length, lora_rank, lora_alpha,
                lora_dropout, target_modules), `compute` ({"gpu_type": "H200", "gpus": 1};
                none for the CPU) and `name`.

        Returns:
            Steps, memory, compute availability, estimated duration and credits.

        Raises:
            InvalidInput: An untrainable model, values out of range, an unknown GPU type, or
                a plan too large for the server's memory limit.
            PermissionDenied: The token lacks the `train` scope.
        """
        body = {"base_model_id": base_model_id, "dataset_id": dataset_id, **plan}
        return cast(TrainingPlan, self._json("POST", "/training-jobs/estimate", json=body))

    def start_training(self, base_model_id: str, dataset_id: str, **plan: Any) -> TrainingJob:
        """Launch a training job (its estimated credits are reserved).

        Args:
            base_model_id: A trainable model's id.
            dataset_id: One of your datasets.
            **plan: As for `plan_training`.

        Returns:
            The queued job.

        Raises:
            InvalidInput: See `plan_training`.
            InsufficientCredits: The balance cannot cover the estimate.
        """
        body = {"base_model_id": base_model_id, "dataset_id": dataset_id, **plan}
        return cast(TrainingJob, self._json("POST", "/training-jobs", json=body))

    def training_jobs(self) -> list[TrainingJob]:
        """Your training jobs, newest first (every page)."""
        return cast(list[TrainingJob], list(self._pages("/training-jobs", {}, PAGE)))

    def training_job(self, training_id: str) -> TrainingJob:
        """One of your training jobs (`tr_…`)."""
        return cast(TrainingJob, self._json("GET", f"/training-jobs/{segment(training_id)}"))

    def training_log(self, training_id: str, after: int = 0) -> list[TrainingLogLine]:
        """Every log line of the job after the id `after`, each step's with its loss (read a
        page at a time: a long job's end lies past the first page)."""
        path = f"/training-jobs/{segment(training_id)}/log"
        lines: list[TrainingLogLine] = []
        while True:
            page = self._page(path, {"after": after, "limit": _LOG_PAGE})["items"]
            lines.extend(cast(list[TrainingLogLine], page))
            if len(page) < _LOG_PAGE:
                return lines
            after = page[-1]["id"]

    def cancel_training(self, training_id: str) -> TrainingJob:
        """Cancel a queued job (nothing charged) or stop a running one between steps.

        Raises:
            Conflict: It has already ended.
        """
        path = f"/training-jobs/{segment(training_id)}/cancel"
        return cast(TrainingJob, self._json("POST", path))

    def wait_for_training(
        self, training_id: str, timeout_s: float = 3600, poll_s: float = 2.0
    ) -> TrainingJob:
        """Poll a training job until it is completed, failed or cancelled.

        Raises:
            TimeoutError: It was still going after `timeout_s` (the job itself goes on).
        """
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.training_job(training_id)
            if job["status"] in FINAL_STATUSES:
                return job
            if time.monotonic() >= deadline:
                raise TimeoutError(f"Training job {training_id} is still {job['status']}.")
            time.sleep(poll_s)
