"""Calls that move benchmarks in and out as files: mapped imports and exports for peer tools."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, cast

from benchgen.client.connection import Connection, Source, file_part, segment
from benchgen.client.shapes import CreatedBenchmark, Format

FileFormat = Literal["auto", "jsonl", "csv", "parquet", "hf"]
Preset = Literal["none", "inspect", "lm_eval_mcq"]
ExportFormat = Literal["jsonl", "inspect", "lm_eval"]
# A large Parquet file takes the server a while to decode and check row by row.
IMPORT_TIMEOUT_S = 300.0


class FormatCalls(Connection):
    """Benchmarks from JSONL, CSV, Parquet or Hugging Face dataset files, and back out as
    JSONL or as Inspect AI and lm-evaluation-harness task folders."""

    def import_file(
        self,
        source: Source,
        title: str,
        format: Format | None = None,
        file_format: FileFormat = "auto",
        preset: Preset = "none",
        mapping: Mapping[str, Any] | None = None,
        description: str = "",
        filename: str | None = None,
    ) -> CreatedBenchmark:
        """Create a benchmark from a file through a field mapping (counts against the creation
        limit); nothing is created unless every row is valid.

        Args:
            source: The file: a path, or its bytes.
            title: The benchmark's title.
            format: `qa` or `mcq`; None decides from the file (mcq when any row has choices).
            file_format: `auto` (by the name, then the first bytes), `jsonl`, `csv`, `parquet`
                or `hf` (a `datasets` Arrow, Parquet or JSON lines file).
            preset: `inspect` (Inspect AI's `input`/`target`/`choices`/`id`), `lm_eval_mcq`
                (MMLU, ARC, query/choices/gold or HellaSwag layouts) or `none`.
            mapping: Source field per part, e.g. `{"prompt": "question", "answer": "key",
                "choices": ["a", "b"], "answer_is": "letter", "tags": "topic"}`; it overrides
                the preset's fields.
            description: Optional longer description.
            filename: The name to send (default: the path's name, or `questions.jsonl`).

        Returns:
            The benchmark and any warnings.

        Raises:
            InvalidInput: The file or rows are wrong; each of `errors` has its `loc`
                `["file", line or row number, field]`.
            PermissionDenied: The token lacks the `create` scope.
            TooLarge: The file is over the server's import limit.
            RateLimited: Too many creations; wait `retry_after` seconds.
        """
        fields = {
            "title": title,
            "description": description,
            "format": format or "",
            "file_format": file_format,
            "preset": preset,
            "mapping": json.dumps(dict(mapping or {})),
        }
        with file_part(source, filename, "questions.jsonl", "application/octet-stream") as part:
            response = self._send(
                "POST",
                "/benchmarks/import/file",
                files={"file": part},
                data=fields,
                timeout=IMPORT_TIMEOUT_S,
            )
        self._note_quota(response)
        return cast(CreatedBenchmark, self._object(response))

    def export_benchmark(self, benchmark_id: str, fmt: ExportFormat = "jsonl") -> bytes:
        """A benchmark with its answer key (owner and collaborators only).

        Args:
            benchmark_id: The benchmark's id (`bm_…`).
            fmt: `jsonl` (one question a line, as `import_file` reads it back), `inspect` or
                `lm_eval` (a zipped task folder that runs it unchanged in that tool).

        Returns:
            The file's bytes, e.g. to write with `Path("task.zip").write_bytes(...)`.

        Raises:
            NotFound: No such benchmark, or you may not see it.
            PermissionDenied: You may see it but not its answer key.
            InvalidInput: A custom (bundle) benchmark, or an unknown format.
            BadResponse: The answer is neither JSONL nor a zip (an HTML page, say).
        """
        path = f"/benchmarks/{segment(benchmark_id)}/export"
        media_types = ("application/x-ndjson", "application/zip")
        return self._download(path, {"format": fmt}, media_types).content
