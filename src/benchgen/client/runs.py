"""Calls on runs: estimate, start, follow, read results and logs, export, cancel, rescore,
rejudge."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, cast

from benchgen.client.connection import PAGE, Connection, segment
from benchgen.client.errors import RunTimeout
from benchgen.client.shapes import Estimate, LogLine, Rejudging, Rescore, Run

FINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
"""Statuses a run never leaves; `wait_for_run` returns when it reaches one."""

# Below the results route's maximum of 1,000, for the same reason as PAGE.
_RESULTS_PAGE = 500
# The log pages by line id, not by cursor, and its lines are short.
_LOG_PAGE = 5000
_EXPORT_TYPES = ("application/x-ndjson", "text/csv")


class RunCalls(Connection):
    """Runs of a model on a benchmark, from estimate to results."""

    def estimate(
        self,
        benchmark_id: str,
        model_id: str,
        settings: dict[str, Any] | None = None,
        subset: dict[str, Any] | None = None,
    ) -> Estimate:
        """The most a run would cost, in credits.

        Args:
            benchmark_id: The benchmark's id.
            model_id: The model's id.
            settings: Generation settings (temperature, top_p, max_tokens, stop, system_prompt,
                few_shot, chain_of_thought, seed, samples); see docs/run-settings.md.
            subset: Part of the benchmark: `{"kind": "first", "n": 20}`, `{"kind": "random",
                "n": 50, "seed": 0}` or `{"kind": "tags", "tags": ["geo"]}`.

        Returns:
            The estimate and how it was computed.

        Raises:
            InvalidInput: A setting the model's provider does not support, or out of range.
        """
        if settings is None and subset is None:
            params = {"benchmark_id": benchmark_id, "model_id": model_id}
            return cast(Estimate, self._json("GET", "/runs/estimate", params=params))
        body = _run_body(benchmark_id, model_id, None, settings, subset, False, None)
        return cast(Estimate, self._json("POST", "/runs/estimate", json=body))

    def start_run(
        self,
        benchmark_id: str,
        model_id: str,
        phase_id: str | None = None,
        settings: dict[str, Any] | None = None,
        subset: dict[str, Any] | None = None,
        cache: bool = False,
        max_credits: int | None = None,
    ) -> Run:
        """Queue a run; reserves the estimate and freezes the benchmark's questions.

        Args:
            benchmark_id: The benchmark's id.
            model_id: The model's id, e.g. the baseline `mdl_builtin_first`.
            phase_id: The phase (the first one when None).
            settings: Generation settings, as for `estimate`.
            subset: Part of the benchmark, as for `estimate` (the run is then partial and never
                on a leaderboard).
            cache: Reuse your own earlier replies to the same prompts and settings.
            max_credits: Refuse to start when the estimate is higher.

        Returns:
            The queued run.

        Raises:
            InsufficientCredits: The balance cannot cover the estimate.
            Conflict: The estimate is above `max_credits`.
        """
        body = _run_body(benchmark_id, model_id, phase_id, settings, subset, cache, max_credits)
        return cast(Run, self._json("POST", "/runs", json=body))

    def retry(self, run_id: str) -> Run:
        """Ask a finished run's errored questions again, as a new run linked to it.

        Returns:
            The new, queued run (its `retry_of` is `run_id`); the original never changes.
        """
        return cast(Run, self._json("POST", f"/runs/{segment(run_id)}/retry"))

    def list_runs(self, benchmark_id: str | None = None) -> list[Run]:
        """Runs you launched and runs on benchmarks you own or collaborate on (every page).

        Args:
            benchmark_id: Only runs on this benchmark.

        Returns:
            The runs, newest first.
        """
        params = {"benchmark_id": benchmark_id} if benchmark_id else {}
        return cast(list[Run], list(self._pages("/runs", params, PAGE)))

    def run(self, run_id: str) -> Run:
        """One run's status, progress, cost and aggregate scores.

        Args:
            run_id: Its id (`run_…`).

        Returns:
            The run.
        """
        return cast(Run, self._json("GET", f"/runs/{segment(run_id)}"))

    def wait_for_run(
        self,
        run_id: str,
        timeout_s: float = 600,
        poll_s: float = 1.0,
        on_progress: Callable[[Run], None] | None = None,
    ) -> Run:
        """Poll a run until it is completed, failed or cancelled.

        Args:
            run_id: The run's id.
            timeout_s: Give up after this many seconds.
            poll_s: Seconds between polls.
            on_progress: Called with the run after every poll (e.g. to print `done_count`).

        Returns:
            The run in its final status.

        Raises:
            RunTimeout: It was still going after `timeout_s` (the run itself goes on).
        """
        deadline = time.monotonic() + timeout_s
        while True:
            current = self.run(run_id)
            if on_progress is not None:
                on_progress(current)
            if current["status"] in FINAL_STATUSES:
                return current
            left = deadline - time.monotonic()
            if left <= 0:
                raise RunTimeout(current, timeout_s)
            time.sleep(min(poll_s, left))

    def results(self, run_id: str) -> list[dict[str, Any]]:
        """Every per-question result of a run, in question order.

        Args:
            run_id: The run's id.

        Returns:
            Rows with `position`, `prompt`, `raw`, `error`, tokens and latency; the benchmark's
            team also gets `expected`, `extracted`, `outcome`, `correct` and `score`.
        """
        return list(self._pages(f"/runs/{segment(run_id)}/results", {}, _RESULTS_PAGE))

    def log(self, run_id: str, after: int = 0) -> list[LogLine]:
        """A run's log lines after the line id `after` (every page).

        Args:
            run_id: The run's id.
            after: The last line id already seen (0: from the start).

        Returns:
            The lines, oldest first; pass the last one's `id` next time to follow a live run.
        """
        lines: list[LogLine] = []
        path = f"/runs/{segment(run_id)}/log"
        while True:
            page = self._page(path, {"after": after, "limit": _LOG_PAGE})
            lines.extend(cast(list[LogLine], page["items"]))
            if not page.get("next_cursor") or not page["items"]:
                return lines
            after = int(page["next_cursor"])

    def export(self, run_id: str, format: Literal["jsonl", "csv"] = "jsonl") -> str:
        """A run's predictions and per-question breakdown as the text of a file.

        Args:
            run_id: The run's id.
            format: `jsonl` or `csv`.

        Returns:
            The file's text, e.g. to write with `Path("run.csv").write_text(...)`.

        Raises:
            BadResponse: The answer is not a JSONL or CSV file (an HTML page, say).
        """
        path = f"/runs/{segment(run_id)}/export"
        return self._download(path, {"format": format}, _EXPORT_TYPES).text

    def cancel(self, run_id: str) -> Run:
        """Cancel a queued run (refunded) or stop a running one (settles what it used).

        Args:
            run_id: The run's id.

        Returns:
            The run after the request.

        Raises:
            Conflict: The run has already ended.
        """
        return cast(Run, self._json("POST", f"/runs/{segment(run_id)}/cancel"))

    def rescore(
        self, run_id: str, scoring: Mapping[str, Any] | None = None, apply: bool = False
    ) -> Rescore:
        """Re-apply scoring to a finished run's saved answers; calls no model.

        Args:
            run_id: The run's id.
            scoring: Other settings, e.g. `{"method": "f1", "options": {"threshold": 0.5}}`
                (owner and collaborators only); None rescoring with the run's own.
            apply: Store the new scores; False is a dry run.

        Returns:
            Aggregates before and after, and which answers change.
        """
        body = {"scoring": dict(scoring)} if scoring is not None else None
        params = {"apply": "true" if apply else "false"}
        path = f"/runs/{segment(run_id)}/rescore"
        return cast(Rescore, self._json("POST", path, params=params, json=body))

    def rejudge(self, run_id: str) -> Rejudging:
        """Have the benchmark's AI judge judge again a completed run's answers whose judging
        failed; the model is not asked again and the run costs nothing more.

        Args:
            run_id: The run's id.

        Returns:
            How many answers went back to the judge; the run's scores change once it has
            judged them (`wait_for_run` does not wait for that: the run stays completed).

        Raises:
            Conflict: The run has not completed, no answer's judging failed, its answers are
                being judged again, or the benchmark has no judge.
            PermissionDenied: The judge is not open to you.
        """
        return cast(Rejudging, self._json("POST", f"/runs/{segment(run_id)}/rejudge"))


def _run_body(
    benchmark_id: str,
    model_id: str,
    phase_id: str | None,
    settings: dict[str, Any] | None,
    subset: dict[str, Any] | None,
    cache: bool,
    max_credits: int | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"benchmark_id": benchmark_id, "model_id": model_id}
    optional = {
        "phase_id": phase_id,
        "settings": settings,
        "subset": subset,
        "max_credits": max_credits,
    }
    body.update({key: value for key, value in optional.items() if value is not None})
    if cache:
        body["cache"] = True
    return body
