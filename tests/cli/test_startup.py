"""`benchgen` starts with what the command it runs needs: `import benchgen.cli` and `benchgen
--help` load no command's module, and `benchgen run` none of the web server, the agent, custom
benchmarks' programs, training or Rich before its first model request; a server loads no
statistics package and no SDK of a provider its brain does not use."""

from __future__ import annotations

import gc
import json

import pytest
from typer.testing import CliRunner

from benchgen.cli import COMMANDS, app
from benchgen.cli.lazy import Entry
from tests.support import python_output

# Each of these costs hundredths to tenths of a second at every start. Prefixes of module names.
SERVER = ("alembic", "fastapi", "starlette", "uvicorn", "httpx", "pydantic_ai", "benchgen.agent")
STORAGE = ("sqlalchemy", "pydantic_settings", "benchgen.db", "benchgen.services", "benchgen.jobs")
# What a model run does not use: custom benchmarks (bundles, Markdown, YAML), training and local
# models' code (loaded when a local or Trained model is run), the model catalogue's request shapes
# (a run only reads its model's row), any adapter (each loads when a run of its kind starts),
# address validation (a run only looks its user up), Rich (loaded once the first model requests
# are out), and the SQL dialect of a database it does not use.
NOT_FOR_A_RUN = (
    "sqlalchemy.dialects.postgresql",
    "benchgen.bundles",
    "markdown_it",
    "yaml",
    "benchgen.training",
    "benchgen.services.training",
    "benchgen.services.models",
    "benchgen.evals.adapters.openai_compat",
    "benchgen.evals.adapters.anthropic",
    "benchgen.evals.adapters.local_gguf",
    "benchgen.evals.adapters.local_hf",
    "email_validator",
    "rich",
)
WIDE = {"COLUMNS": "200"}
runner = CliRunner()


def _last_line(program: str) -> str:
    return python_output(program).splitlines()[-1]


def _loaded(program: str, prefixes: tuple[str, ...]) -> list[str]:
    """The modules under `prefixes` that `program` leaves imported (it prints them last)."""
    probe = (
        f"{program}\nimport json, sys\n"
        "print(json.dumps(sorted(m for m in sys.modules "
        f"if any(m == p or m.startswith(p + '.') for p in {prefixes!r}))))"
    )
    found: list[str] = json.loads(_last_line(probe))
    return found


def test_importing_the_command_loads_no_command() -> None:
    assert _loaded("import benchgen.cli", (*SERVER, *STORAGE, "rich", "pydantic")) == []


def test_the_listing_loads_no_command() -> None:
    program = (
        "import sys\nfrom benchgen.cli import main\nsys.argv = ['benchgen', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    assert _loaded(program, (*SERVER, *STORAGE)) == []


def test_a_run_loads_only_what_a_model_run_needs() -> None:
    # `benchgen run` imports this module and no other command's: the worker's handlers, the
    # launch and the storage come with it.
    assert _loaded("import benchgen.cli.runs", (*SERVER, *NOT_FOR_A_RUN)) == []


def test_a_server_with_a_hosted_brain_loads_neither_scipy_nor_the_other_providers_sdk() -> None:
    # SciPy waits for the first comparison of two runs; each brain imports its own SDK only.
    program = (
        "from benchgen.app import create_app\n"
        "from benchgen.agent.brains import build_brain\n"
        "from benchgen.core.config import Settings\n"
        "build_brain(Settings(agent_model='openai:m', agent_base_url='http://127.0.0.1:9/v1'))"
    )
    assert _loaded(program, ("scipy", "anthropic", "pydantic_ai.models.anthropic")) == []


def test_the_listing_is_each_commands_own_help(monkeypatch: pytest.MonkeyPatch) -> None:
    listed = runner.invoke(app, ["--help"], env=WIDE)
    monkeypatch.setattr(Entry, "placeholder", Entry.load)  # list the loaded commands instead
    loaded = runner.invoke(app, ["--help"], env=WIDE)
    assert listed.exit_code == loaded.exit_code == 0
    assert listed.output == loaded.output
    assert all(entry.name in listed.output for entry in COMMANDS)


def test_the_script_loads_its_command_with_the_collector_paused_then_frozen() -> None:
    program = (
        "import gc, sys\nfrom benchgen.cli import main\nsys.argv = ['benchgen', 'run', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(gc.isenabled(), gc.get_freeze_count())"
    )
    enabled, frozen = _last_line(program).split()
    assert enabled == "True" and int(frozen) > 10_000  # the command's modules and classes


def test_commands_invoked_in_a_process_freeze_nothing() -> None:
    frozen = gc.get_freeze_count()
    assert runner.invoke(app, ["run", "--help"], env=WIDE).exit_code == 0
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_the_server_parses_http_in_c_on_libuvs_loop() -> None:
    # `benchgen serve` leaves Uvicorn's choice on "auto", which takes these when installed: a
    # tenth less CPU a request than h11 on asyncio's loop (bench/api_load.py).
    import uvloop
    from uvicorn.loops.auto import auto_loop_factory
    from uvicorn.protocols.http.auto import AutoHTTPProtocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert AutoHTTPProtocol is HttpToolsProtocol
    assert auto_loop_factory() is uvloop.new_event_loop
