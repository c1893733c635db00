"""GGUF files whose header claims more than they hold are refused at once, not parsed for ever."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from benchgen.core.errors import InvalidInput
from benchgen.services import models
from benchgen.training.gguf_header import GGUFHeaderError, read_header
from benchgen.training.sizing import describe_base
from benchgen.training.spec import BaseWeights
from tests.support import OPERATOR, World
from tests.training.tiny_model import write_tiny_gguf

_UINT8, _STRING, _ARRAY = 0, 8, 9


def _text(value: bytes) -> bytes:
    return struct.pack("<Q", len(value)) + value


def _gguf(tensors: int, entries: bytes, count: int = 1) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, tensors, count) + entries


def _array(key: bytes, item: int, length: int) -> bytes:
    return _text(key) + struct.pack("<IIQ", _ARRAY, item, length)


def test_an_array_claiming_more_items_than_the_file_holds_is_refused_at_once(
    tmp_path: Path,
) -> None:
    """Before, gguf-py's reader looped over the 2^40 items a 70-byte file claimed, growing by
    gigabytes, in every catalogue request that looked at the model."""
    path = tmp_path / "liar.gguf"
    path.write_bytes(_gguf(0, _array(b"tokenizer.ggml.tokens", _UINT8, 2**40)))
    code = (
        "import sys; from benchgen.training.sizing import describe_base; "
        "from benchgen.training.spec import BaseWeights; "
        "print(describe_base(BaseWeights('gguf', sys.argv[1])).reason)"
    )
    done = subprocess.run(  # noqa: S603 - this Python on a file the test wrote
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=30
    )
    assert "not a readable GGUF file" in done.stdout, done.stderr
    assert "past the end of the file" in done.stdout


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (_gguf(2**40, b"", count=0), "2^40 tensors"),
        (_gguf(0, b"", count=2**40), "2^40 metadata entries"),
        (_gguf(0, _array(b"tokenizer.ggml.tokens", _STRING, 2**40)), "2^40 array items"),
        (_gguf(0, _text(b"general.name") + struct.pack("<IQ", _STRING, 2**50)), "past the end"),
        (b"GGUF" + struct.pack("<IQQ", 9, 0, 0), "version 9"),
        (b"GGML" + bytes(20), "no GGUF magic"),
    ],
)
def test_a_header_claiming_what_the_file_cannot_hold_is_refused(
    tmp_path: Path, data: bytes, said: str
) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    with pytest.raises(GGUFHeaderError) as raised:
        read_header(path)
    assert said.replace("2^40", str(2**40)) in str(raised.value)
    info = describe_base(BaseWeights("gguf", str(path)))
    assert not info.trainable and info.reason.startswith("not a readable GGUF file")


def test_a_repeated_key_is_refused(tmp_path: Path) -> None:
    entry = _text(b"general.name") + struct.pack("<I", _STRING) + _text(b"x")
    path = tmp_path / "twice.gguf"
    path.write_bytes(_gguf(0, entry * 2, count=2))
    with pytest.raises(GGUFHeaderError, match=r"'general\.name' is given twice"):
        read_header(path)


def test_a_written_file_reads_as_gguf_py_reads_it(train_extra: None, tmp_path: Path) -> None:
    from gguf import GGUFReader

    path = write_tiny_gguf(tmp_path / "tiny.gguf", "llama")
    header, reader = read_header(Path(path)), GGUFReader(path)
    assert [(t.name, t.n_elements) for t in header.tensors] == [
        (str(t.name), int(t.n_elements)) for t in reader.tensors
    ]
    assert header.fields["general.architecture"] == "llama"
    assert header.fields["llama.block_count"] == 1


def test_a_gguf_file_whose_header_lies_is_not_registered(
    train_extra: None, world: World, tmp_path: Path
) -> None:
    """Only its name and existence were checked: a lying file was registered, and then shown to
    every user's training catalogue as a model nobody could train or run."""
    path = tmp_path / "liar.gguf"
    path.write_bytes(_gguf(0, _array(b"tokenizer.ggml.tokens", _UINT8, 2**40)))
    spec = {"name": "Liar", "kind": "local_gguf", "endpoint_model": str(path)}
    with pytest.raises(InvalidInput) as refused:
        world.do(OPERATOR, models.create_platform_model, spec)
    [problem] = refused.value.errors
    assert problem["loc"] == ["endpoint_model"]
    assert problem["msg"].startswith("is not a readable GGUF file: ")
    good = write_tiny_gguf(tmp_path / "tiny.gguf", "llama")
    made = world.do(OPERATOR, models.create_platform_model, {**spec, "endpoint_model": good})
    assert made.kind == "local_gguf"
