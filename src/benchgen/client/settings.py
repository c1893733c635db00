"""Calls that read or change settings: a benchmark's scoring, my run notifications, and the
leaderboard as a file."""

from __future__ import annotations

from typing import Any, cast

from benchgen.client.connection import Connection, segment
from benchgen.client.shapes import Notifications, Scoring


class SettingsCalls(Connection):
    """Scoring of a benchmark, notifications of my runs, leaderboard downloads."""

    def get_scoring(self, benchmark_id: str) -> Scoring:
        """How a qa or mcq benchmark's future runs are scored.

        Returns:
            The method and every one of its options.

        Raises:
            NotFound: No such benchmark visible to you.
            Conflict: A custom benchmark (its bundle's programs score it).
        """
        return cast(Scoring, self._json("GET", f"/benchmarks/{segment(benchmark_id)}/scoring"))

    def set_scoring(
        self, benchmark_id: str, method: str, options: dict[str, Any] | None = None
    ) -> Scoring:
        """Change how future runs are scored: `exact`, `includes`, `f1`, `numeric`, `regex` (qa)
        or `choice` (mcq), with options such as the normalisation steps (`case`,
        `punctuation`, `articles`, `whitespace`, `nfkc`, `number_words`).

        Returns:
            The settings now in force, every option filled in.

        Raises:
            InvalidInput: An unknown method or option, or a method that does not fit the format.
            PermissionDenied: Not the benchmark's owner or a collaborator, or no `edit` scope.
        """
        body = {"method": method, "options": options or {}}
        path = f"/benchmarks/{segment(benchmark_id)}/scoring"
        return cast(Scoring, self._json("PUT", path, json=body))

    def export_leaderboard(
        self, benchmark_id: str, fmt: str = "csv", phase_id: str | None = None
    ) -> bytes:
        """A phase's leaderboard as a CSV or JSON file (the first phase by default).

        Returns:
            The file's bytes.

        Raises:
            BadResponse: The answer is neither CSV nor JSON (an HTML page, say).
        """
        params = {"format": fmt, **({"phase_id": phase_id} if phase_id else {})}
        path = f"/benchmarks/{segment(benchmark_id)}/leaderboard/export"
        return self._download(path, params, ("text/csv", "application/json")).content

    def notifications(self) -> Notifications:
        """Where my run notifications go (a mail, a signed webhook)."""
        return cast(Notifications, self._json("GET", "/me/notifications"))

    def set_notifications(
        self,
        email_on_finish: bool = False,
        webhook_url: str | None = None,
        rotate_secret: bool = False,
    ) -> Notifications:
        """Replace my notification settings. A new or rotated webhook's signing secret is in
        this answer's `webhook_secret`, once.

        Raises:
            InvalidInput: A webhook address that is not http(s) or names a private host.
            PermissionDenied: The token lacks the `runs` scope.
        """
        body = {
            "email_on_finish": email_on_finish,
            "webhook_url": webhook_url,
            "rotate_secret": rotate_secret,
        }
        return cast(Notifications, self._json("PUT", "/me/notifications", json=body))
