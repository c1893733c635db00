"""`benchgen --help` lists each command by a summary written beside it (so that listing loads no
command): it must be the first paragraph of the command's own help, or the two drift apart."""

import pytest

from benchgen.cli import COMMANDS
from benchgen.cli.lazy import Entry


@pytest.mark.parametrize("entry", COMMANDS, ids=lambda entry: entry.name)
def test_the_listed_summary_is_the_commands_first_paragraph(entry: Entry) -> None:
    first = (entry.load().help or "").split("\n\n")[0]
    assert " ".join(entry.summary.split()) == " ".join(first.split())
