"""Model folders holding a pipe or an outsized config or tokenizer are refused, not read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchgen.training.sizing import (
    MAX_CONFIG_BYTES,
    MAX_TOKENIZER_BYTES,
    describe_base,
    unreadable_folder,
)
from benchgen.training.spec import BaseWeights
from tests.training.tiny_model import write_header_folder

_DESCRIBE = (
    "import sys; from pathlib import Path; "
    "from benchgen.training.sizing import describe_base, unreadable_folder; "
    "from benchgen.training.spec import BaseWeights; "
    "print(unreadable_folder(Path(sys.argv[1]))); "
    "print(describe_base(BaseWeights('hf_folder', sys.argv[1])).reason)"
)


def test_a_pipe_named_safetensors_is_refused_without_waiting(tmp_path: Path) -> None:
    """Before, reading its "header" opened the pipe and waited for a writer for ever: the
    operator's add-local-model hung, and so did every catalogue request that looked at it."""
    folder = write_header_folder(tmp_path / "piped")
    (folder / "model.safetensors").unlink()
    os.mkfifo(folder / "model.safetensors")
    done = subprocess.run(  # noqa: S603 - this Python on a file the test wrote
        [sys.executable, "-c", _DESCRIBE, str(folder)], capture_output=True, text=True, timeout=30
    )
    registered, described = done.stdout.splitlines()
    assert "model.safetensors: not a regular file" in registered, done.stderr
    assert "model.safetensors: not a regular file" in described


def test_an_outsized_config_is_refused_unread(tmp_path: Path) -> None:
    """Before, a config.json of any size was read whole, in every catalogue request."""
    folder = write_header_folder(tmp_path / "big")
    config = folder / "config.json"
    with config.open("r+b") as stream:
        stream.truncate(MAX_CONFIG_BYTES + 1)  # sparse: no disk used
    assert "config.json is larger than 16 MiB" in unreadable_folder(folder)
    info = describe_base(BaseWeights("hf_folder", str(folder)))
    assert not info.trainable and "config.json is larger than 16 MiB" in info.reason


def test_an_outsized_or_piped_tokenizer_file_is_refused(tmp_path: Path) -> None:
    """Before, only the tokenizer's presence was checked: a 3 GB tokenizer.json registered, and
    the worker that ran the model read it whole; a pipe named tokenizer_config.json hung it."""
    folder = write_header_folder(tmp_path / "bigtok")
    with (folder / "tokenizer.json").open("r+b") as stream:
        stream.truncate(MAX_TOKENIZER_BYTES + 1)  # sparse: no disk used
    assert unreadable_folder(folder) == "its tokenizer.json is larger than 256 MiB"
    (folder / "tokenizer.json").write_text("{}")
    os.mkfifo(folder / "tokenizer_config.json")
    assert unreadable_folder(folder) == "its tokenizer_config.json is not a regular file"
    info = describe_base(BaseWeights("hf_folder", str(folder)))
    assert not info.trainable and info.reason == "its tokenizer_config.json is not a regular file"
