"""`--url` commands end in one line, never a traceback, whatever the user typed."""

from __future__ import annotations

from typer.testing import CliRunner

from benchgen.cli import app

runner = CliRunner()
# Nothing listens here: the refusal comes before anything is sent.
NOWHERE = ["--url", "http://127.0.0.1:9", "--token", "bgp_x"]


def test_an_id_or_search_too_long_to_send_is_one_error_line() -> None:
    huge = "é" * 70_000  # httpx refuses to build a URL this long
    for args in (
        ["benchmarks", "list", "--search", huge],
        ["benchmarks", "export", huge],
        ["compare", huge, "run_b"],
    ):
        result = runner.invoke(app, [*args, *NOWHERE])
        assert result.exit_code == 1, result.output
        assert isinstance(result.exception, SystemExit), result.exception
        assert "too long" in result.stderr and "Traceback" not in result.output


def test_both_as_and_url_is_refused_as_both() -> None:
    # It said "give either --as EMAIL or --url URL", which the user had.
    both = ["--as", "ana@example.com", *NOWHERE]
    for args in (["benchmarks", "list"], ["compare", "run_a", "run_b"], ["chat", "-m", "hi"]):
        result = runner.invoke(app, [*args, *both])
        assert result.exit_code == 2, result.output
        assert "not both" in result.stderr
