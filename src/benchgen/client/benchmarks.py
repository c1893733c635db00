"""Calls on benchmarks: list, read, create, import, change, publish, leaderboards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from benchgen.client.connection import PAGE, Connection, segment
from benchgen.client.shapes import (
    Benchmark,
    ChangePreview,
    CreatedBenchmark,
    EditedBenchmark,
    Format,
    Leaderboard,
    Question,
)

# The questions route allows 10,000 a page: one request reads almost any benchmark.
_QUESTIONS_PAGE = 10000


class BenchmarkCalls(Connection):
    """Benchmarks, their questions and their leaderboards."""

    def list_benchmarks(self, mine: bool = False, search: str = "") -> list[Benchmark]:
        """Benchmarks you can see, following every page.

        Args:
            mine: Only benchmarks you own.
            search: Words to look for in titles and descriptions.

        Returns:
            Yours, those shared with you, and published ones (unless `mine`).
        """
        params: dict[str, Any] = {"mine": mine}
        if search:
            params["search"] = search
        return cast(list[Benchmark], list(self._pages("/benchmarks", params, PAGE)))

    def get_benchmark(self, benchmark_id: str) -> Benchmark:
        """One benchmark.

        Args:
            benchmark_id: Its id (`bm_…`).

        Returns:
            The benchmark; its entity tag is then in `etag`, for `change_benchmark`'s
            `if_match`.

        Raises:
            NotFound: It does not exist or you may not see it.
        """
        return cast(Benchmark, self._tagged("GET", f"/benchmarks/{segment(benchmark_id)}"))

    def questions(self, benchmark_id: str) -> list[Question]:
        """All questions of a benchmark, in order (answers only for its team).

        Args:
            benchmark_id: The benchmark's id.

        Returns:
            The questions, every page; the benchmark's entity tag is then in `etag`, for
            `change_benchmark`'s `if_match`.
        """
        path = f"/benchmarks/{segment(benchmark_id)}/questions"
        tags: list[str | None] = []
        found = list(
            self._pages(path, {}, _QUESTIONS_PAGE, lambda sent: tags.append(sent.get("ETag")))
        )
        # The first page's: should a change come between two pages, it is older than the list
        # read, so a change made from that list is refused rather than saved over the other.
        self.etag = tags[0]
        return cast(list[Question], found)

    def create_benchmark(
        self,
        title: str,
        format: Format,
        questions: Sequence[Mapping[str, Any]],
        description: str = "",
    ) -> CreatedBenchmark:
        """Create a qa or mcq benchmark with its questions (counts against the creation limit).

        Args:
            title: The benchmark's title.
            format: `qa` (free answers) or `mcq` (multiple choice).
            questions: Each `{"prompt", "answer", "choices"?, "tags"?, "metadata"?}`; for mcq the
                answer is a choice letter (`"B"`) or the choice's text.
            description: Optional longer description.

        Returns:
            The benchmark and any warnings (e.g. duplicate questions).

        Raises:
            InvalidInput: A question or field is wrong; `errors` says where.
            RateLimited: Too many creations; wait `retry_after` seconds.
            TooLarge: The body is over the server's limit; import the questions instead.
        """
        body = {
            "title": title,
            "format": format,
            "description": description,
            "questions": [dict(question) for question in questions],
        }
        response = self._send("POST", "/benchmarks", json=body)
        self._note_quota(response)
        return cast(CreatedBenchmark, self._object(response))

    def import_benchmark(
        self,
        title: str,
        format: Format,
        content: str,
        content_format: Literal["jsonl", "csv"] = "jsonl",
        description: str = "",
    ) -> CreatedBenchmark:
        """Create a benchmark from the text of a JSONL or CSV file (counts against the limit).

        Args:
            title: The benchmark's title.
            format: `qa` or `mcq`.
            content: The file's text, e.g. `Path("qs.jsonl").read_text()`.
            content_format: `jsonl` (one question object per line) or `csv` (a header row).
            description: Optional longer description.

        Returns:
            The benchmark and any warnings.

        Raises:
            InvalidInput: A line or column is wrong; `errors` says where.
            RateLimited: Too many creations; wait `retry_after` seconds.
        """
        body = {
            "title": title,
            "format": format,
            "description": description,
            "content_format": content_format,
            "content": content,
        }
        response = self._send("POST", "/benchmarks/import", json=body)
        self._note_quota(response)
        return cast(CreatedBenchmark, self._object(response))

    def change_benchmark(
        self,
        benchmark_id: str,
        title: str | None = None,
        description: str | None = None,
        questions: Sequence[Mapping[str, Any]] | None = None,
        *,
        if_match: str | None = None,
    ) -> EditedBenchmark:
        """Change the title, description and/or the full question list (None: unchanged).

        Args:
            benchmark_id: The benchmark's id.
            title: A new title.
            description: A new description.
            questions: The complete new question list (replaces the old one).
            if_match: The `etag` of the read the change was made from (`get_benchmark`,
                `questions`, `preview_change`): the change is saved only if nobody changed
                the benchmark since. None: saved whatever changed since (the last save wins).

        Returns:
            The changed benchmark and what the change did; its new entity tag is then in
            `etag`, for a next change.

        Raises:
            Frozen: Questions cannot change once a run was accepted.
            Stale: `if_match` names a state the benchmark has left; nothing was saved.
            ValueError: `if_match` holds characters no tag has (nothing was sent).
        """
        body = _change_body(title, description, questions)
        path = f"/benchmarks/{segment(benchmark_id)}"
        headers = None if if_match is None else {"If-Match": _checked_tag(if_match)}
        return cast(EditedBenchmark, self._tagged("PATCH", path, json=body, headers=headers))

    def preview_change(
        self,
        benchmark_id: str,
        title: str | None = None,
        description: str | None = None,
        questions: Sequence[Mapping[str, Any]] | None = None,
    ) -> ChangePreview:
        """What `change_benchmark` with the same arguments would do; applies nothing.

        Args:
            benchmark_id: The benchmark's id.
            title: A new title.
            description: A new description.
            questions: The complete new question list.

        Returns:
            The diff, the versions before and after, and warnings; the entity tag of the
            state it was previewed on is then in `etag`: `change_benchmark` sent with it as
            `if_match` saves what was previewed, or nothing.
        """
        body = _change_body(title, description, questions)
        path = f"/benchmarks/{segment(benchmark_id)}/preview-change"
        return cast(ChangePreview, self._tagged("POST", path, json=body))

    def publish(self, benchmark_id: str) -> Benchmark:
        """Make a benchmark visible to everyone (its questions, never the answer key).

        Args:
            benchmark_id: The benchmark's id.

        Returns:
            The published benchmark.
        """
        path = f"/benchmarks/{segment(benchmark_id)}/publish"
        return cast(Benchmark, self._json("POST", path))

    def leaderboard(self, benchmark_id: str, phase_id: str | None = None) -> Leaderboard:
        """The ranked leaderboard of a phase.

        Args:
            benchmark_id: The benchmark's id.
            phase_id: The phase (the first one when None).

        Returns:
            Columns and every ranked row (every page; `next_cursor` is None).
        """
        params: dict[str, Any] = {"limit": PAGE}
        if phase_id:
            params["phase_id"] = phase_id
        path = f"/benchmarks/{segment(benchmark_id)}/leaderboard"
        board = cast(Leaderboard, self._json("GET", path, params=params))
        while cursor := board.get("next_cursor"):
            params["cursor"] = cursor
            more = cast(Leaderboard, self._json("GET", path, params=params))
            board = {**more, "rows": board["rows"] + more["rows"]}
        return board


def as_input(question: Mapping[str, Any]) -> dict[str, Any]:
    """A question as `questions()` returns it, in the shape creating or changing accepts.

    Drops `position` and empty fields and turns lettered `choices` back into a list, so a
    question list can be read, edited and sent back::

        qs = [as_input(q) for q in bg.questions(benchmark_id)]
        bg.change_benchmark(benchmark_id, questions=[*qs, {"prompt": "4+4?", "answer": "8"}])

    Args:
        question: A question read from the API (or already in input form).

    Returns:
        A new dict with `prompt`, `answer` and, when present, `choices`, `tags`, `metadata`.
    """
    made = {k: v for k, v in question.items() if k != "position" and v is not None}
    choices = made.get("choices")
    if isinstance(choices, Mapping):
        made["choices"] = [choices[letter] for letter in sorted(choices)]
    return made


def _checked_tag(tag: str) -> str:
    """`tag` as a header can carry it: a line end or an accent was httpx's UnicodeEncodeError,
    or a connection "broken off", rather than a word on what was wrong."""
    if not tag.isascii() or not tag.isprintable():
        raise ValueError(
            "if_match holds characters no ETag has (accents, line ends or other controls); "
            "give the etag of a read as it came, e.g. bg.etag after bg.get_benchmark(id)."
        )
    return tag


def _change_body(
    title: str | None, description: str | None, questions: Sequence[Mapping[str, Any]] | None
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if title is not None:
        body["title"] = title
    if description is not None:
        body["description"] = description
    if questions is not None:
        body["questions"] = [dict(question) for question in questions]
    return body
