"""`benchgen db upgrade` as an operator meets it after installing an older version by mistake."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from benchgen.cli import app
from benchgen.services.runtime import Runtime

runner = CliRunner()


@pytest.mark.usefixtures("cli_env")
def test_a_database_upgraded_by_a_newer_version_is_one_error_line(runtime: Runtime) -> None:
    """Before, the command printed Alembic's traceback and exited 0."""
    with runtime.database.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0999'")
    result = runner.invoke(app, ["db", "upgrade"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: the database's schema is at revision 0999")
    assert "Traceback" not in result.output and result.output.count("\n") <= 3
