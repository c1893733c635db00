"""A competition.yaml that is not UTF-8 (an accent saved as Latin-1) is refused with the line
and the byte that are wrong, not only with the file's name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchgen.bundles.layout import MAX_PAGES_BYTES, load_bundle
from benchgen.core.errors import InvalidInput
from tests.bundle_factory import competition


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_latin1_letter_is_refused_with_its_line_and_byte(tmp_path: Path, bom: bytes) -> None:
    text = yaml.safe_dump(competition(), sort_keys=False).encode()
    assert text.count(b"Tiny custom") == 1
    (tmp_path / "competition.yaml").write_bytes(bom + text.replace(b"Tiny custom", b"Tin\xe9"))
    with pytest.raises(InvalidInput) as caught:
        load_bundle(tmp_path)
    line = text.split(b"\n").index(b"title: Tiny custom") + 1
    msg = "competition.yaml must be UTF-8 text: byte 0xe9 on this line is not"
    assert caught.value.errors == [{"loc": ["competition.yaml"], "line": line, "msg": msg}]


def test_pages_share_one_size_budget_however_often_a_file_is_named(tmp_path: Path) -> None:
    # Each page entry renders its file again: one 1.5 MiB file named by many pages would
    # otherwise cost that much memory and rendering time per entry (a zip of a few KB).
    comp = competition(terms="big.txt")
    comp["pages"] = [{"title": f"Page {i}", "file": "big.txt"} for i in range(3)]
    (tmp_path / "competition.yaml").write_text(yaml.safe_dump(comp, sort_keys=False))
    (tmp_path / "big.txt").write_bytes(b"x" * (3 << 19))
    with pytest.raises(InvalidInput) as caught:
        load_bundle(tmp_path)
    over = [e for e in caught.value.errors if "together" in e["msg"]]
    msg = f"'big.txt': the pages and terms together are larger than {MAX_PAGES_BYTES} bytes"
    assert [(e["loc"], e["msg"]) for e in over] == [
        (["pages", 2, "file"], msg),
        (["terms"], msg),
    ]
    assert all(isinstance(e["line"], int) for e in over)
