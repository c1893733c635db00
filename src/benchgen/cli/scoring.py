"""`benchgen scoring`: how a qa or mcq benchmark's future runs are scored."""

from __future__ import annotations

from typing import Annotated

import typer

from benchgen.cli.common import As, as_user, open_runtime, print_json
from benchgen.cli.helptext import App
from benchgen.services.benchmarks import scoring

OPTION_HELP = (
    "An option as NAME=VALUE (repeatable): normalisation steps nfkc, case, punctuation, "
    "articles, whitespace, number_words take true/false; tolerances take numbers."
)


def scoring_command(
    benchmark: Annotated[str, typer.Argument(help="Benchmark id (bm_…).")],
    as_email: As,
    method: Annotated[
        str | None,
        typer.Option(help="exact, includes, f1, numeric or regex (qa); choice (mcq)."),
    ] = None,
    option: Annotated[list[str] | None, typer.Option(help=OPTION_HELP)] = None,
) -> None:
    """Show the scoring of a benchmark, or change it with --method and --option.

    Options not given keep their values, unless --method changes the method: then they start
    from the new method's defaults. Past runs keep their scoring until rescored (`benchgen
    rescore RUN --apply`).

    \b
    Examples:
      $ benchgen scoring bm_… --as ana@example.com
      $ benchgen scoring bm_… --method includes --option number_words=true --as ana@example.com
    """
    with open_runtime() as runtime, as_user(runtime, as_email) as ctx:
        current = scoring.get_scoring(ctx, benchmark)
        if method is not None or option:
            chosen = method or current["method"]
            kept = current["options"] if chosen == current["method"] else {}
            options = {**kept, **_parsed(option)}
            current = scoring.set_scoring(ctx, benchmark, {"method": chosen, "options": options})
    print_json(current)


def _parsed(options: list[str] | None) -> dict[str, bool | float]:
    parsed: dict[str, bool | float] = {}
    for text in options or []:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise typer.BadParameter(f"{text!r}: expected NAME=VALUE", param_hint="--option")
        parsed[name.strip()] = _value(text, value.strip())
    return parsed


def _value(option: str, text: str) -> bool | float:
    """The value of `option` (NAME=VALUE as typed), named in a refusal: it said only "Invalid
    value: 'maybe'", neither the option nor which of several was wrong."""
    if text.lower() in ("true", "yes", "on"):
        return True
    if text.lower() in ("false", "no", "off"):
        return False
    try:
        return float(text)
    except ValueError:
        raise typer.BadParameter(
            f"{option!r}: expected true, false or a number after =", param_hint="--option"
        ) from None


commands = App()
commands.command("scoring")(scoring_command)
