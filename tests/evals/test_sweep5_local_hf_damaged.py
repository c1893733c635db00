"""A local model whose tokenizer file is damaged fails with an error that says where to look."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from benchgen.evals.adapters import build_adapter
from benchgen.evals.types import FatalModelError, Item, ModelSpec
from tests.training.conftest import TRAIN_EXTRA, require_or_skip
from tests.training.tiny_model import build_tiny_llama

pytestmark = pytest.mark.anyio


async def test_a_damaged_tokenizer_is_named_not_a_bare_key(tmp_path: Path) -> None:
    """Before, the run failed with "cannot load local model '…': 'added_tokens'" and nothing
    said that this was a missing key of a file, nor which files to check."""
    missing = [name for name in TRAIN_EXTRA if importlib.util.find_spec(name) is None]
    require_or_skip(f"needs {', '.join(missing)}" if missing else None)
    folder = build_tiny_llama(tmp_path / "damaged")
    (folder / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "BPE"}}')
    adapter = build_adapter(ModelSpec("local_hf", str(folder)))
    with pytest.raises(FatalModelError) as raised:
        await adapter.complete(Item(0, "Hello?"), "Hello?")
    message = str(raised.value)
    assert "KeyError 'added_tokens' while reading its files" in message
    assert "check its config.json and tokenizer files" in message
