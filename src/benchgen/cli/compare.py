"""`benchgen compare RUN_A RUN_B`: two finished runs of one benchmark, paired question by
question, here (`--as`) or on a server (`--url`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.text import Text

from benchgen.cli.common import (
    AsHere,
    Token,
    Url,
    cell,
    cli_principal,
    console,
    one_place,
    open_runtime,
    print_json,
    say_error,
    wrapping_table,
)
from benchgen.cli.doors import WHERE, Plain, plain, reported
from benchgen.cli.helptext import App
from benchgen.services.runtime import transaction

RunArgument = Annotated[str, typer.Argument(metavar="RUN_A", help="The reference run (run_…).")]
OtherArgument = Annotated[
    str, typer.Argument(metavar="RUN_B", help="The run compared with it (run_…).")
]
COUNTS = {
    "both_right": "both right",
    "both_wrong": "both wrong",
    "only_a": "only A right",
    "only_b": "only B right",
}
AsJson = Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")]
HELP = (
    "Compare two finished runs of the same benchmark and version, question by question: "
    "each run's accuracy, the difference B − A with a paired bootstrap 95% interval, the "
    "exact McNemar test, and how many questions both got right, both wrong, only A or only B "
    "got right. Per-tag differences (and, with --json, the per-question table) only for the "
    "benchmark's owner and collaborators." + WHERE + "\n\n\b\nExamples:\n"
    "  $ benchgen compare run_… run_… --as ana@example.com\n"
    "  $ benchgen compare run_… run_… --json --url https://bench.example > comparison.json"
)


def compare_command(
    run_a: RunArgument,
    run_b: OtherArgument,
    as_email: AsHere = None,
    url: Url = None,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """Print the comparison of two runs (the command's help is HELP)."""
    one_place(as_email, url)
    found = _here(as_email, run_a, run_b) if as_email else _remote(url or "", token, run_a, run_b)
    if as_json:
        print_json(found)
    else:
        show(found)


def _here(email: str, run_a: str, run_b: str) -> Plain:
    # Loaded when the command runs: SciPy would slow every other command's start.
    from benchgen.services.runs import compare

    with (
        open_runtime() as runtime,
        reported(),
        transaction(runtime, cli_principal(runtime, email), write=False) as ctx,
    ):
        return plain(compare.compare_runs(ctx, run_a, run_b))


def _remote(url: str, token: str | None, run_a: str, run_b: str) -> Plain:
    from benchgen.client import BenchGen

    try:
        client = BenchGen(url, token)
    except ValueError as exc:
        say_error(str(exc))
        raise typer.Exit(2) from None
    with client, reported():
        return dict(client.compare_runs(run_a, run_b))


def show(found: Plain) -> None:
    """The comparison as tables: runs, the difference and its test, counts, tags."""
    console.print(
        Text.assemble(
            "Comparing ",
            (found["run_b"], "bold"),
            " (B) with ",
            (found["run_a"], "bold"),
            f" (A) on {found['benchmark_id']} version {found['benchmark_version']}: "
            f"{found['n']} questions answered by both.",
        )
    )
    runs = wrapping_table("run", "model", "accuracy", title="Runs")
    runs.add_row("A " + found["run_a"], found["model_a"], _percent(found["accuracy_a"]))
    runs.add_row("B " + found["run_b"], found["model_b"], _percent(found["accuracy_b"]))
    console.print(runs)
    edited = [name for name in ("a", "b") if found[f"edited_{name}"]]
    if edited:
        console.print(
            f"Run {' and '.join(name.upper() for name in edited)}: its official score was "
            "corrected by hand (its page and the leaderboard show it); these figures come from "
            "the answers as scored."
        )
    figures = wrapping_table("figure", "value", title="B − A")
    figures.add_row("difference", _points(found["difference"]))
    figures.add_row(
        f"{found['confidence']:.0%} interval (paired bootstrap, {found['resamples']} resamples)",
        f"{_points(found['ci_low'])} to {_points(found['ci_high'])}",
    )
    figures.add_row("McNemar exact p", f"{found['p_value']:.4g}")
    for name, label in COUNTS.items():
        figures.add_row(label, str(found[name]))
    console.print(figures)
    if found["unpaired_a"] or found["unpaired_b"]:
        console.print(
            f"Left out: {found['unpaired_a']} question(s) only A answered, "
            f"{found['unpaired_b']} only B answered."
        )
    _show_tags(found)


def _show_tags(found: Plain) -> None:
    if not found.get("tags"):
        return
    columns = ("tag", "questions", "A", "B", "B − A", "only A", "only B")
    table = wrapping_table(*columns, title="By tag")
    for tag in found["tags"]:
        table.add_row(
            cell(tag, "tag"),
            cell(tag, "n"),
            _percent(tag.get("accuracy_a")),
            _percent(tag.get("accuracy_b")),
            _points(tag.get("difference")),
            cell(tag, "only_a"),
            cell(tag, "only_b"),
        )
    console.print(table)


def _percent(value: Any) -> str:
    return "" if value is None else f"{float(value) * 100:.1f}%"


def _points(value: Any) -> str:
    return "" if value is None else f"{float(value) * 100:+.1f} points"


commands = App()
commands.command("compare", help=HELP)(compare_command)
