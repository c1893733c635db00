"""Calls on custom benchmarks: upload a Codabench v2 bundle, new versions, download, submit."""

from __future__ import annotations

from typing import Literal, cast

from benchgen.client.connection import Connection, Source, file_part, segment
from benchgen.client.shapes import Bundle, CreatedBenchmark, Run

ZIP = "application/zip"
SubmissionKind = Literal["auto", "results", "code"]
# The server unpacks a bundle and scores its solutions in the sandbox before it answers, which
# takes far longer than an ordinary request.
UPLOAD_TIMEOUT_S = 600.0


class BundleCalls(Connection):
    """Custom benchmarks made from Codabench v2 bundles, and submissions to them."""

    def upload_bundle(
        self, bundle: Source, filename: str | None = None, timeout: float = UPLOAD_TIMEOUT_S
    ) -> CreatedBenchmark:
        """Create a custom benchmark from a Codabench v2 bundle (counts against the creation
        limit); it stays private until published.

        Args:
            bundle: The bundle zip: a path, or its bytes.
            filename: The name to send (default: the path's name, or `bundle.zip`).
            timeout: Seconds to wait: the server scores the bundle's solutions first.

        Returns:
            The benchmark and the warnings (unknown keys of competition.yaml); read the
            solutions' results with `get_bundle`.

        Raises:
            InvalidInput: The bundle is unsafe or invalid; `errors` lists every problem, each
                with its `loc` in competition.yaml and its `line`.
            TooLarge: The bundle is over the server's limit.
            RateLimited: Too many creations; wait `retry_after` seconds.
        """
        with file_part(bundle, filename, "bundle.zip", ZIP) as part:
            response = self._send(
                "POST", "/benchmarks/bundles", files={"bundle": part}, timeout=timeout
            )
        return cast(CreatedBenchmark, self._object(response))

    def get_bundle(self, benchmark_id: str) -> Bundle:
        """The current bundle of a custom benchmark.

        Args:
            benchmark_id: The benchmark's id (`bm_…`).

        Returns:
            Its version, pages and rules; solutions, warnings and versions for its team.

        Raises:
            NotFound: It does not exist, you may not see it, or it is not a custom benchmark.
        """
        return cast(Bundle, self._json("GET", f"/benchmarks/{segment(benchmark_id)}/bundle"))

    def upload_bundle_version(
        self,
        benchmark_id: str,
        bundle: Source,
        filename: str | None = None,
        timeout: float = UPLOAD_TIMEOUT_S,
    ) -> Bundle:
        """Upload a changed bundle as the benchmark's next version (runs keep theirs).

        Args:
            benchmark_id: The custom benchmark's id.
            bundle: The changed bundle zip: a path, or its bytes.
            filename: The name to send (default: the path's name, or `bundle.zip`).
            timeout: Seconds to wait: the server scores the bundle's solutions first.

        Returns:
            The new current bundle.

        Raises:
            PermissionDenied: Not its owner or a collaborator, or the bundle adds or removes
                phases or tasks (done in the web app, at /benchmarks/{id}/settings/phases).
            Conflict: Not a custom benchmark, or a dropped phase has runs.
            InvalidInput: The bundle is invalid; `errors` says where.
        """
        path = f"/benchmarks/{segment(benchmark_id)}/bundle"
        with file_part(bundle, filename, "bundle.zip", ZIP) as part:
            response = self._send("POST", path, files={"bundle": part}, timeout=timeout)
        return cast(Bundle, self._object(response))

    def download_bundle(self, benchmark_id: str, version: int | None = None) -> bytes:
        """A bundle zip exactly as it was uploaded (owner and collaborators only).

        Args:
            benchmark_id: The custom benchmark's id.
            version: Which version (the current one when None).

        Returns:
            The zip's bytes, e.g. to write with `Path("bundle.zip").write_bytes(...)`.

        Raises:
            PermissionDenied: You may see the benchmark but not its reference data.
            NotFound: No such benchmark or version.
            BadResponse: The answer is not a zip (an HTML page, say).
        """
        params = {"version": version} if version is not None else None
        path = f"/benchmarks/{segment(benchmark_id)}/bundle/download"
        return self._download(path, params, ("application/zip",)).content

    def submit(
        self,
        benchmark_id: str,
        submission: Source,
        phase: int | None = None,
        kind: SubmissionKind = "auto",
        filename: str | None = None,
    ) -> Run:
        """Submit a results zip or a code zip to a custom benchmark, as Codabench participants
        do; it becomes a queued run (follow it with `wait_for_run`).

        Args:
            benchmark_id: The custom benchmark's id.
            submission: The zip: a path, or its bytes.
            phase: The phase's index in the bundle (the first open one when None).
            kind: `results`, `code` (for an ingestion program), or `auto`: code when the phase
                has an ingestion program and the zip holds Python files.
            filename: The name to send (default: the path's name, or `submission.zip`).

        Returns:
            The queued run (`model_id` is None: no catalogue model answers).

        Raises:
            Conflict: The phase is not open or its `max_submissions` is used.
            RateLimited: The phase's submissions per day are used; wait `retry_after` seconds.
            InvalidInput: Not a zip, no such phase, or an unknown kind.
        """
        fields: dict[str, str] = {"kind": kind}
        if phase is not None:
            fields["phase"] = str(phase)
        path = f"/benchmarks/{segment(benchmark_id)}/submissions"
        with file_part(submission, filename, "submission.zip", ZIP) as part:
            response = self._send("POST", path, files={"submission": part}, data=fields)
        return cast(Run, self._object(response))

    def program_output(self, run_id: str) -> dict[str, str]:
        """What the bundle's programs printed for each task of a run (the benchmark's owner and
        collaborators only: a scoring program may print reference data).

        Args:
            run_id: The run's id (`run_…`).

        Returns:
            The output text per task, keyed `task-<index>`.
        """
        body = self._json("GET", f"/runs/{segment(run_id)}/program-output")
        return {str(task): str(text) for task, text in body.items()}
