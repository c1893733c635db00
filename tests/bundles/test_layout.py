"""Bundle folders as people make them; every missing or unsafe path reported with loc and line."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

from benchgen.bundles.archive import ArchiveLimits
from benchgen.bundles.layout import load_bundle, read_program
from benchgen.bundles.pages import render_page
from benchgen.core.errors import InvalidInput

YAML = """\
version: 2
title: Demo
terms: pages/terms.md
pages:
  - title: Overview
    file: pages/overview.md
  - title: Data
    file: pages/data.html
phases:
  - name: Dev
    start: 1-1-2026
    tasks: [0, 1]
tasks:
  - name: Folders
    scoring_program: scoring_program/
    ingestion_program: ingestion_program/
    reference_data: reference_data/
    input_data: input_data/
  - name: Zips
    scoring_program: scoring_program.zip
    reference_data: reference_data_1.zip
solutions:
  - path: solution/
    tasks: [0]
  - path: solution.zip
    tasks: [1]
leaderboard:
  - key: main
    columns:
      - key: accuracy
"""


def zip_bytes(files: dict[str, str | bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buf.getvalue()


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data)
        else:
            path.write_bytes(data)


def full_bundle(root: Path, yaml_text: str = YAML) -> None:
    write(
        root,
        {
            "competition.yaml": yaml_text,
            "pages/terms.md": "Be **nice**.",
            "pages/overview.md": "# Overview\n\n|a|b|\n|-|-|\n|1|2|\n",
            "pages/data.html": "<p>Data</p><script>alert(1)</script>",
            "scoring_program/metadata.yaml": "command: python3 score.py\n",
            "scoring_program/score.py": "print(1)\n",
            "ingestion_program/metadata": "command: python3 ingest.py\ndescription: no extension\n",
            "reference_data/truth.csv": "1\n",
            "input_data/x.csv": "x\n",
            "solution/prediction": "1\n",
            # Zipped the folder rather than its content: metadata one level down.
            "scoring_program.zip": zip_bytes({"wrapped/metadata.yaml": "command: ./run\n"}),
            "reference_data_1.zip": zip_bytes({"truth.csv": "2\n"}),
            "solution.zip": zip_bytes({"prediction": "2\n"}),
        },
    )


def problems(root: Path, **kw: Any) -> list[dict[str, Any]]:
    with pytest.raises(InvalidInput) as caught:
        load_bundle(root, **kw)
    return caught.value.errors


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_real_world_layout_loads(tmp_path: Path) -> None:
    full_bundle(tmp_path)
    bundle = load_bundle(tmp_path)
    assert bundle.root == tmp_path
    folders, zips = bundle.tasks[0], bundle.tasks[1]
    assert folders.scoring_program.command == "python3 score.py"
    assert folders.scoring_program.folder == tmp_path / "scoring_program"
    assert folders.ingestion_program is not None
    assert folders.ingestion_program.command == "python3 ingest.py"
    assert folders.reference_data == tmp_path / "reference_data"
    assert folders.input_data == tmp_path / "input_data"
    assert zips.scoring_program.command == "./run"
    assert zips.scoring_program.folder.name == "wrapped"
    assert zips.scoring_program.source == "scoring_program.zip"
    assert zips.reference_data is not None
    assert (zips.reference_data / "truth.csv").read_text() == "2\n"
    # Unpacked zips live under the bundle root, in a hidden throw-away folder.
    assert zips.reference_data.parent.parent == tmp_path
    assert zips.reference_data.parent.name.startswith(".unpacked-")
    assert (bundle.solutions[1] / "prediction").read_text() == "2\n"
    assert bundle.solutions[0] == tmp_path / "solution"
    titles = [title for title, _ in bundle.pages]
    assert titles == ["Overview", "Data"]
    assert "<table>" in bundle.pages[0][1]
    assert bundle.pages[1][1] == "<p>Data</p>"
    assert bundle.terms_html.strip() == "<p>Be <strong>nice</strong>.</p>"


def test_competition_yaml_inside_a_single_top_folder(tmp_path: Path) -> None:
    full_bundle(tmp_path / "my_bundle")
    (tmp_path / "__MACOSX").mkdir()
    bundle = load_bundle(tmp_path)
    assert bundle.root == tmp_path / "my_bundle"
    assert bundle.tasks[1].reference_data is not None
    assert bundle.tasks[1].reference_data.is_relative_to(tmp_path)


def test_no_competition_yaml(tmp_path: Path) -> None:
    write(tmp_path, {"a/competition.yaml": YAML, "b/readme": "x"})
    assert problems(tmp_path)[0]["loc"] == ["competition.yaml"]


def test_competition_yaml_errors_come_through(tmp_path: Path) -> None:
    full_bundle(tmp_path, YAML.replace("version: 2", "version: 1"))
    assert problems(tmp_path)[0]["loc"] == ["version"]


@pytest.mark.parametrize(
    ("remove", "loc", "needle"),
    [
        ("scoring_program/metadata.yaml", ["tasks", 0, "scoring_program"], "scoring_program/"),
        ("ingestion_program/metadata", ["tasks", 0, "ingestion_program"], "ingestion_program/"),
        ("reference_data/truth.csv", ["tasks", 0, "reference_data"], "reference_data/"),
        ("reference_data_1.zip", ["tasks", 1, "reference_data"], "reference_data_1.zip"),
        ("solution.zip", ["solutions", 1, "path"], "solution.zip"),
        ("pages/data.html", ["pages", 1, "file"], "pages/data.html"),
        ("pages/terms.md", ["terms"], "terms:"),
    ],
)
def test_each_missing_thing_is_reported_with_loc_and_line(
    tmp_path: Path, remove: str, loc: list[Any], needle: str
) -> None:
    full_bundle(tmp_path)
    (tmp_path / remove).unlink()
    if remove == "reference_data/truth.csv":
        (tmp_path / "reference_data").rmdir()
    errors = problems(tmp_path)
    assert [(e["loc"], e["line"]) for e in errors] == [(loc, line_of(YAML, needle))]
    assert remove.split("/")[0] in errors[0]["msg"]


def test_all_problems_are_reported_together(tmp_path: Path) -> None:
    full_bundle(tmp_path)
    (tmp_path / "scoring_program/metadata.yaml").write_text("description: no command\n")
    (tmp_path / "input_data/x.csv").unlink()
    (tmp_path / "input_data").rmdir()
    (tmp_path / "pages/overview.md").unlink()
    with pytest.raises(InvalidInput) as caught:
        load_bundle(tmp_path)
    assert caught.value.message == "the bundle has 3 problems"
    assert {tuple(e["loc"]) for e in caught.value.errors} == {
        ("tasks", 0, "scoring_program"),
        ("tasks", 0, "input_data"),
        ("pages", 0, "file"),
    }


def test_a_symlink_to_outside_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, {"metadata.yaml": "command: cat /etc/shadow\n"})
    bundle = tmp_path / "bundle"
    full_bundle(bundle)
    (bundle / "reference_data/truth.csv").unlink()
    (bundle / "reference_data").rmdir()
    os.symlink(outside, bundle / "reference_data")
    errors = problems(bundle)
    assert errors[0]["loc"] == ["tasks", 0, "reference_data"]
    assert "symbolic link" in errors[0]["msg"]


def test_a_file_that_is_not_a_zip_is_refused(tmp_path: Path) -> None:
    full_bundle(tmp_path)
    (tmp_path / "reference_data_1.zip").write_text("not a zip")
    errors = problems(tmp_path)
    assert errors[0]["loc"] == ["tasks", 1, "reference_data"]
    assert "folder or a .zip" in errors[0]["msg"]


def test_a_hostile_nested_zip_is_refused_and_writes_nothing_outside(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    full_bundle(bundle)
    (bundle / "reference_data_1.zip").write_bytes(zip_bytes({"../../../escaped": "x"}))
    errors = problems(bundle)
    assert errors[0]["loc"] == ["tasks", 1, "reference_data"]
    assert errors[0]["line"] == line_of(YAML, "reference_data_1.zip")
    assert not list(tmp_path.rglob("escaped"))


def test_nested_zips_share_the_upload_limits(tmp_path: Path) -> None:
    full_bundle(tmp_path)
    (tmp_path / "reference_data_1.zip").write_bytes(zip_bytes({"big.bin": os.urandom(5000)}))
    held = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    errors = problems(tmp_path, limits=ArchiveLimits(max_total_bytes=held + 1000))
    assert errors[0]["loc"] == ["tasks", 1, "reference_data"]


def test_program_metadata_variants(tmp_path: Path) -> None:
    write(tmp_path, {"a/metadata": "command: run\n", "b/inner/metadata.yaml": "command: go\n"})
    assert read_program(tmp_path / "a", ("x",), "a").command == "run"
    spec = read_program(tmp_path / "b", ("x",), "b")
    assert (spec.folder, spec.command, spec.source) == (tmp_path / "b/inner", "go", "b")


@pytest.mark.parametrize(
    "metadata",
    [
        "command: ''\n",
        "- a list\n",
        "command: [1]\n",
        "a: &x [1]\nb: *x\ncommand: go\n",
        "{{{",
        "[" * 30_000,
    ],
)
def test_bad_program_metadata(tmp_path: Path, metadata: str) -> None:
    write(tmp_path, {"p/metadata.yaml": metadata})
    with pytest.raises(InvalidInput) as caught:
        read_program(tmp_path / "p", ("tasks", 0, "scoring_program"), "p", 7)
    assert caught.value.errors[0]["loc"] == ["tasks", 0, "scoring_program"]
    assert caught.value.errors[0]["line"] == 7


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("page.html", b"<p>hi</p><script>alert(1)</script>"),
        ("page.md", b"hi <img src=x onerror=alert(1)>"),
        ("page.md", b"[hi](javascript:alert(1)) <a href='javascript:alert(1)'>x</a>"),
        ("page.htm", b"<svg onload=alert(1)><script>alert(1)</script></svg>hi"),
        ("page.html", b"<iframe src=https://e.com></iframe><form><input></form>hi"),
        ("page.html", b"<p style='x' onclick='alert(1)' class='c'>hi</p><style>p{}</style>"),
    ],
)
def test_the_sanitiser_strips_active_content(name: str, raw: bytes) -> None:
    html = render_page(name, raw).lower()
    # Markdown leaves a refused link as text; what matters is that no attribute carries it.
    for bad in ("<script", "onerror", "onload", "onclick", 'href="javascript', "<svg", "<iframe"):
        assert bad not in html
    for bad in ("<form", "<input", "<style", "style=", "class="):
        assert bad not in html
    assert "hi" in html


def test_the_sanitiser_keeps_safe_content() -> None:
    html = render_page(
        "p.md",
        b"## T\n\n[link](https://e.com) ![i](https://e.com/i.png) ![rel](logo.png)\n\n"
        b"> q\n\n```\ncode\n```\n\n- a\n\n---\n",
    )
    assert '<a href="https://e.com" rel="noopener noreferrer">link</a>' in html
    assert '<img src="https://e.com/i.png" alt="i">' in html
    assert '<img alt="rel">' in html
    # Headings start below the site's own h1 (the benchmark) and h2 (the page's title).
    for tag in ("<h4>", "<blockquote>", "<pre><code>", "<ul>", "<hr>"):
        assert tag in html
    assert render_page("p.md", b"# A\n\n###### F").split("\n")[:2] == ["<h3>A</h3>", "<h6>F</h6>"]


def test_pages_that_are_not_utf8_or_not_markdown() -> None:
    assert "caf\ufffd" in render_page("p.md", b"caf\xe9")
    assert render_page("notes.txt", b"<b>x</b>") == "<pre>&lt;b&gt;x&lt;/b&gt;</pre>"
