"""`benchgen db`: database maintenance."""

from __future__ import annotations

from benchgen.cli.common import console, labelled, open_runtime
from benchgen.cli.helptext import App

app = App(help="Database maintenance.", no_args_is_help=True)
commands = App()
commands.add_typer(app, name="db")


@app.command("upgrade")
def db_upgrade() -> None:
    """Create the database or migrate it to the newest schema (safe to repeat).

    \b
    Examples:
      $ benchgen db upgrade
    """
    with open_runtime() as runtime:
        labelled("Database is up to date:", runtime.database.safe_url, "bold", console)
