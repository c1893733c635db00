"""A GGUF base kept converted in its cache folder: each part written whole or not at all, found
again while the file is unchanged, and never in the way of the load that kept it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from benchgen.training import weights
from benchgen.training.spec import BaseWeights
from benchgen.training.weights import MODEL, TOKENIZER, keep_part, kept_part
from tests.training.tiny_model import write_tiny_gguf


class Loaded:
    """Stands for a tokenizer or model: `save_pretrained` writes `text`, or raises `fails`."""

    def __init__(self, text: str = "weights", fails: BaseException | None = None) -> None:
        self.text, self.fails = text, fails

    def save_pretrained(self, folder: str) -> None:
        (Path(folder) / "model.safetensors").write_text("half")
        if self.fails is not None:
            raise self.fails
        (Path(folder) / "model.safetensors").write_text(self.text)


@pytest.fixture
def base(tmp_path: Path) -> BaseWeights:
    gguf = tmp_path / "models" / "tiny.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF tiny")
    return BaseWeights("gguf", str(gguf), str(tmp_path / "cache"))


def _entries(base: BaseWeights) -> list[Path]:
    assert base.cache_dir is not None
    return sorted(path for path in Path(base.cache_dir).rglob("*"))


def test_a_kept_part_is_found_again_until_the_file_changes(base: BaseWeights) -> None:
    assert kept_part(base, MODEL) is None
    keep_part(base, MODEL, Loaded("fp32 weights"))
    found = kept_part(base, MODEL)
    assert found is not None and Path(found, "model.safetensors").read_text() == "fp32 weights"
    assert kept_part(base, TOKENIZER) is None  # each part is kept on its own
    Path(base.path).write_bytes(b"GGUF tiny, replaced by a new version")
    assert kept_part(base, MODEL) is None  # a changed file is converted again


@pytest.fixture
def warned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the module warns (read from its logger, whatever other tests did to logging)."""
    said: list[str] = []
    monkeypatch.setattr(weights.log, "warning", lambda text, *args: said.append(text % args))
    return said


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), MemoryError()])
def test_a_part_that_cannot_be_saved_leaves_nothing_and_only_warns(
    base: BaseWeights, failure: BaseException, warned: list[str]
) -> None:
    keep_part(base, MODEL, Loaded(fails=failure))  # the load that kept it goes on
    assert kept_part(base, MODEL) is None
    # Only the base's (empty) folder is left: no half-written part, no staging folder.
    left = _entries(base)
    assert len(left) == 1 and left[0].name.startswith("tiny-") and not any(left[0].iterdir())
    assert len(warned) == 1 and "could not keep the converted model" in warned[0]


def test_a_part_another_process_kept_first_is_left_as_it_was(
    base: BaseWeights, warned: list[str]
) -> None:
    class Racing(Loaded):
        def save_pretrained(self, folder: str) -> None:
            keep_part(base, MODEL, Loaded("the other process's"))  # finishes first
            super().save_pretrained(folder)

    keep_part(base, MODEL, Racing("ours"))
    found = kept_part(base, MODEL)
    assert found is not None
    assert Path(found, "model.safetensors").read_text() == "the other process's"
    assert not [path for path in _entries(base) if path.name.startswith(".")]  # no staging left
    assert warned == []


def test_without_a_cache_folder_or_for_a_safetensors_folder_nothing_is_kept(
    base: BaseWeights, tmp_path: Path
) -> None:
    uncached = BaseWeights("gguf", base.path)
    keep_part(uncached, MODEL, Loaded())
    assert kept_part(uncached, MODEL) is None
    folder = BaseWeights("hf_folder", str(tmp_path / "models"), str(tmp_path / "cache"))
    keep_part(folder, MODEL, Loaded())
    assert kept_part(folder, MODEL) is None
    assert not (tmp_path / "cache").exists()


def test_within_the_block_a_gguf_file_is_parsed_once_and_after_it_anew(tmp_path: Path) -> None:
    import gguf

    path, llama = write_tiny_gguf(tmp_path / "tiny-llama.gguf", "llama"), gguf.MODEL_ARCH.LLAMA
    base = BaseWeights("gguf", path)
    parsers = gguf.GGUFReader, gguf.get_tensor_name_map
    with weights.gguf_parsed_once(base):
        first = gguf.GGUFReader(path)
        with weights.gguf_parsed_once(base):  # an inner block shares the outer one's parses
            assert gguf.GGUFReader(path) is first
        assert gguf.GGUFReader(path) is first, "the inner block ended the outer one's"
        assert gguf.get_tensor_name_map(llama, 1) is gguf.get_tensor_name_map(llama, 1)
        assert first.tensors[0].name == "token_embd.weight"
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == parsers
    assert gguf.GGUFReader(path) is not gguf.GGUFReader(path)


def test_another_threads_gguf_load_waits_for_the_block(tmp_path: Path) -> None:
    import gguf

    path = write_tiny_gguf(tmp_path / "tiny-llama.gguf", "llama")
    base = BaseWeights("gguf", path)
    entered, seen = threading.Event(), []

    def other() -> None:
        entered.set()
        with weights.gguf_parsed_once(base):
            seen.append(gguf.GGUFReader(path))

    with weights.gguf_parsed_once(base):
        ours = gguf.GGUFReader(path)
        thread = threading.Thread(target=other, daemon=True)
        thread.start()
        entered.wait(5)
        thread.join(0.2)
        assert thread.is_alive() and not seen, "it loaded while our block remembered parses"
    thread.join(5)
    assert len(seen) == 1 and seen[0] is not ours, "it parsed the file itself"
