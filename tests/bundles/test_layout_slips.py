"""Bundles that load as Codabench loads them, with a warning where they look like a slip."""

from __future__ import annotations

from pathlib import Path

from benchgen.bundles.layout import load_bundle
from tests.bundles.test_layout import YAML, full_bundle, line_of, write


def _warnings(root: Path) -> list[dict[str, object]]:
    return [w.as_error() for w in load_bundle(root).competition.warnings]


def test_a_second_yaml_file_beside_competition_yaml_is_warned_about(tmp_path: Path) -> None:
    """competition.yml beside competition.yaml was skipped without a word: an organiser who
    edited the .yml saw none of the edits and no reason why."""
    full_bundle(tmp_path)
    write(tmp_path, {"competition.yml": YAML.replace("title: Demo", "title: Edited")})
    bundle = load_bundle(tmp_path)
    assert bundle.competition.title == "Demo"
    assert _warnings(tmp_path) == [
        {
            "loc": ["competition.yml"],
            "line": None,
            "msg": "competition.yml is ignored: competition.yaml is read, as Codabench does",
        }
    ]


def test_a_logo_missing_from_the_bundle_is_warned_about_at_its_line(tmp_path: Path) -> None:
    """`image:` was never looked at: a logo left out of the zip went unnoticed."""
    text = YAML.replace("title: Demo\n", "title: Demo\nimage: logo.png\n")
    full_bundle(tmp_path, text)
    assert _warnings(tmp_path) == [
        {
            "loc": ["image"],
            "line": line_of(text, "image:"),
            "msg": "'logo.png' is not a file of the bundle; the competition has no logo",
        }
    ]
    write(tmp_path, {"logo.png": b"\x89PNG"})
    assert _warnings(tmp_path) == []
