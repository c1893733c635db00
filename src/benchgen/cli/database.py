"""`benchgen db`: database maintenance."""

from __future__ import annotations

from benchgen.cli.common import console, labelled, open_runtime
from benchgen.cli.helptext import App

app = App(help="Database maintenance.", no_args_is_help=True)
commands = App()
commands.add_typer(app, name="db")


@app.command("upgrade")
def db_upgrade() -> None:
    """Create the database's tables or migrate them to the newest schema (safe to repeat).

    A PostgreSQL database must exist already (`createdb`); SQLite's file is made. Processes
    that migrate at once take turns. A database a newer BenchGen upgraded is refused.

    \b
    Examples:
      $ benchgen db upgrade
    """
    with open_runtime() as runtime:
        labelled("Database is up to date:", runtime.database.safe_url, "bold", console)
