"""Text the CLI prints never carries a terminal control: a server's answers (`--url`) are shown
as they came, and an ESC in a title recoloured, retitled or cleared the terminal."""

import io

from rich.table import Table
from rich.text import Text

from benchgen.cli.widths import PipeWideConsole

TITLE = "Evil\x1b]0;new window title\x1b\\\x1b[2J\x9b31m"


def _printed(*renderables: object) -> str:
    out = io.StringIO()
    console = PipeWideConsole(file=out, force_terminal=True, color_system="standard", width=200)
    console.print(*renderables)
    return out.getvalue()


def test_a_control_in_a_printed_text_is_shown_by_its_code_and_styles_still_work() -> None:
    table = Table("title")
    table.add_row(TITLE)
    printed = _printed(table, Text("Error:", style="red"))
    assert "Evil\\x1b]0;new window title\\x1b\\\\x1b[2J\\x9b31m" in printed
    assert "\x1b]0" not in printed and "\x1b[2J" not in printed and "\x9b" not in printed
    assert "\x1b[31mError:\x1b[0m" in printed  # the console's own colours are kept
