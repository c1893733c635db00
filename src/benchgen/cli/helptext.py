"""How every command's help reads: paragraphs that flow, and values named in plain words."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

if TYPE_CHECKING:
    from typer._click import Context, Parameter  # Typer's own copy of Click

F = TypeVar("F", bound=Callable[..., Any])
# Typer labels a value by its Python type (`<str>`, `<int range>`); help reads better with what
# to type, as Click used to write it.
METAVARS = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "list[str]": "TEXT"}
# argparse's test of a negative number, which is a value rather than an option.
NEGATIVE_NUMBER = re.compile(r"-\d+|-\d*\.\d+")


class Command(TyperCommand):
    """A command whose help flows and whose values are named plainly."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        make_readable(self)

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        return as_flag(super().get_help_option(ctx))

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        # Click read `admin set create_limit_per_day -1` as an unknown option "-1": the value
        # never reached the setting's own rules. Let negative numbers through as values when
        # they are the only words that name no option, so a mistyped option is still one.
        known = {name for param in self.get_params(ctx) for name in param.opts}
        if only_numbers_unknown(args, known):
            ctx.ignore_unknown_options = True
        return super().parse_args(ctx, args)


def only_numbers_unknown(args: Sequence[str], known: set[str]) -> bool:
    """Whether some words of `args` (before any `--`) look like options that are not in
    `known`, and every one of them is a negative number."""
    words = args[: args.index("--")] if "--" in args else args
    unknown = [
        word
        for word in words
        if word.startswith("-") and len(word) > 1 and word.partition("=")[0] not in known
    ]
    return bool(unknown) and all(NEGATIVE_NUMBER.fullmatch(word) for word in unknown)


class Group(TyperGroup):
    """A command group whose help, and its commands' summaries, flow."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        make_readable(self)

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        return as_flag(super().get_help_option(ctx))


class Argument(TyperArgument):
    """An argument named once, by its metavar, in the usage line and in the help."""

    def get_usage_pieces(self, ctx: Context) -> list[str]:
        # Typer writes a required argument as `{RUN_ID}`, which reads as literal braces.
        name = self.metavar or ""
        name = name if self.required else f"[{name}]"
        return [name if self.nargs == 1 else f"{name}..."]

    def display_type_rich(self, ctx: Context) -> str | None:
        return None  # the metavar beside it already says what to give


class App(typer.Typer):
    """A Typer app whose groups are `Group`s and whose commands are `Command`s."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{"cls": Group, **kwargs})

    def command(self, name: str | None = None, **kwargs: Any) -> Callable[[F], F]:
        return super().command(name, **{"cls": Command, **kwargs})


def make_readable(command: TyperCommand | TyperGroup) -> None:
    """Let the command's help and its parameters' help flow, and name every value plainly."""
    command.help = flowing(command.help)
    command.short_help = flowing(command.short_help)
    ctx = typer.Context(command)
    for param in command.params:
        if isinstance(param, TyperArgument | TyperOption):
            param.help = flowing(param.help)
        if param.metavar is None:
            param.metavar = metavar_of(param, ctx)
        if type(param) is TyperArgument:
            # Typer makes the arguments itself, with no class to choose.
            param.__class__ = Argument


def flowing(text: str | None) -> str | None:
    """`text` with each paragraph on one line, for Rich to wrap to the terminal's width.

    Blank lines still part paragraphs; one that starts with `\\b` keeps its lines, as in Click.
    """
    if text is None:
        return None
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        part if part.startswith("\b") else " ".join(line.strip() for line in part.splitlines())
        for part in paragraphs
    )


def metavar_of(param: Parameter, ctx: Context) -> str:
    """What the help shows for a value: nothing for a flag, the name of an argument, and a
    word (`TEXT`, `INTEGER`) or the choices (`[qa|mcq]`) for an option."""
    if isinstance(param, TyperOption) and (param.is_flag or param.count):
        return ""
    if not isinstance(param, TyperOption):
        return (param.name or "").upper()
    label = param.display_type(ctx).strip("<>")
    if "|" in label:
        return f"[{label}]"
    label = label.removesuffix(" range")  # Typer shows the range itself, after the metavar
    return METAVARS.get(label, label.upper())


def as_flag(option: TyperOption | None) -> TyperOption | None:
    """The help option, shown without Typer's `<bool>`: a flag takes no value."""
    if option is not None:
        option.metavar = ""
    return option
