"""A command group that imports a command's module only when a command line names it."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

import typer
import typer.main

from benchgen.cli.helptext import Command as HelpfulCommand
from benchgen.cli.helptext import Group

if TYPE_CHECKING:
    from typer._click import Command, Context  # Typer's own copy of Click


@dataclass(frozen=True)
class Entry:
    """A top-level command or group: its name, the module under `benchgen.cli` whose `commands`
    app registers it, and the first paragraph of its help, which `benchgen --help` lists."""

    name: str
    module: str
    summary: str

    def placeholder(self) -> HelpfulCommand:
        """What listing the command needs, made without importing its module."""
        return HelpfulCommand(name=self.name, help=self.summary)

    def load(self) -> Command:
        """The real command: its options, subcommands and whole help."""
        commands: typer.Typer = import_module(f"benchgen.cli.{self.module}").commands
        return typer.main.get_group(commands).commands[self.name]


class LazyGroup(Group):
    """Lists every entry from placeholders; the one a command line names is loaded first.

    Click resolves a command line (to run it, show its help or complete its options) through
    `resolve_command`; only listing commands reads the placeholders.
    """

    entries: tuple[Entry, ...] = ()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for entry in self.entries:
            self.commands[entry.name] = entry.placeholder()

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        named = named_entry(self.entries, args)
        if named is not None:
            self.commands[named.name] = named.load()
        return super().resolve_command(ctx, args)


def named_entry(entries: Sequence[Entry], args: Sequence[str]) -> Entry | None:
    """The entry a command line's first word names, if any."""
    return next((entry for entry in entries if args and entry.name == args[0]), None)


def preload(entries: Sequence[Entry], args: Sequence[str]) -> None:
    """Import the module of the command `args` names, with the garbage collector paused, and
    freeze what it made: for a process that runs that one command (`benchgen.cli.main`)."""
    named = named_entry(entries, args)
    if named is None:
        return
    with lasting_imports():
        import_module(f"benchgen.cli.{named.module}")


@contextmanager
def lasting_imports() -> Iterator[None]:
    """Run the block (imports of what lives as long as the process) with the garbage collector
    paused, then freeze everything made so far, so that no collection walks it again."""
    # Loading allocates ~100k objects (modules, classes, mappers) that live as long as the
    # process: collecting as they came was about a fifth of `benchgen run --help`'s time, and
    # every later full collection would walk them again. Frozen, they never are. Left out of
    # the group's own loading, so a process that runs many commands (tests) never freezes.
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
