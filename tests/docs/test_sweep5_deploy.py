"""What docs/deploy.md promises an operator is what the code does: the defaults it states, the
metrics and job kinds it lists, where the key file lies and what `make run` seeds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchgen.cli.demo import DEMO_EMAIL, DEMO_PASSWORD
from benchgen.core.config import METRICS_TOKEN_MIN, Settings
from benchgen.jobs.handlers import HANDLERS
from benchgen.services import metrics
from benchgen.services._keyring import _fernet, _key_file

ROOT = Path(__file__).resolve().parents[2]
PAGE = " ".join((ROOT / "docs" / "deploy.md").read_text(encoding="utf-8").split())

# (the statement as the page words it, the setting, the value the statement gives)
STATED = [
    ("`BENCHGEN_WORKER_THREADS` (2) embedded job workers", "worker_threads", 2),
    ("`BENCHGEN_AGENT_TURN_LEASE_S` (30 s)", "agent_turn_lease_s", 30),
    ("`BENCHGEN_JOB_LEASE_S` (60 s)", "job_lease_s", 60),
    ("`BENCHGEN_JOB_SWEEP_S` (10 s)", "job_sweep_s", 10),
    ("`BENCHGEN_LOCAL_MODEL_THREADS` threads (2)", "local_model_threads", 2),
    ("its own `BENCHGEN_TRAINING_THREADS`, 1)", "training_threads", 1),
    ("(`BENCHGEN_TRAINING_MAX_HOURS` + 1 h", "training_max_hours", 24),
]


@pytest.mark.parametrize(("statement", "setting", "value"), STATED)
def test_the_stated_default_is_the_settings(statement: str, setting: str, value: object) -> None:
    assert statement in PAGE, f"deploy.md no longer says {statement!r}: update STATED"
    assert Settings.model_fields[setting].default == value, statement


def test_the_metrics_token_length_is_the_one_checked() -> None:
    assert f"{METRICS_TOKEN_MIN}+ random characters" in PAGE


def test_the_metrics_table_lists_every_family_and_job_kind() -> None:
    """The table left out `rejudge`, a kind `benchgen_jobs` reports (re-judging a run)."""
    listed = set(re.findall(r"`(benchgen_[a-z_]+)\{", PAGE))
    assert listed == set(metrics._HELP)
    row = re.search(r"queued and running jobs by kind \(([^)]*)\)", PAGE)
    assert row is not None
    assert set(re.findall(r"`([a-z_]+)`", row.group(1))) == set(HANDLERS)


def test_the_key_file_is_where_the_page_says(tmp_path: Path) -> None:
    assert "`$BENCHGEN_DATA_DIR/secret.key`" in PAGE
    key = _key_file(tmp_path)
    assert (tmp_path / "secret.key").read_bytes().strip() == key


def test_the_demo_make_run_seeds_is_the_one_warned_of() -> None:
    """The page told operators to deploy with `make run`, which seeds a login anyone can read."""
    assert f"`{DEMO_EMAIL}` with the published password `{DEMO_PASSWORD}`" in PAGE
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "HOST ?= 127.0.0.1" in makefile and "benchgen demo" in makefile
    assert "make run " not in PAGE.split("## A team")[0].split("```")[1]


def test_the_key_file_read_into_the_setting_decrypts_what_it_encrypted(tmp_path: Path) -> None:
    """Upgrades: a data folder moving to a team sets BENCHGEN_SECRET_KEY to secret.key's text."""
    assert "`BENCHGEN_SECRET_KEY` set to the contents of `$BENCHGEN_DATA_DIR/secret.key`" in PAGE
    sealed = _fernet(None, tmp_path).encrypt(b"sk-model-key")
    text = (tmp_path / "secret.key").read_text()
    settings = Settings(secret_key=text, data_dir=tmp_path / "elsewhere")
    assert _fernet(settings.secret_key, settings.data_dir).decrypt(sealed) == b"sk-model-key"
