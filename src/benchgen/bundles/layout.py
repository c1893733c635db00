"""Resolve an extracted bundle folder: competition.yaml, programs, data, solutions and pages."""

from __future__ import annotations

import re
import stat
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from benchgen.bundles.archive import DEFAULT_LIMITS, ArchiveLimits, extract_zip, is_zip
from benchgen.bundles.competition import CompetitionSpec, TaskSpec, parse_competition_with_lines
from benchgen.bundles.pages import render_page
from benchgen.bundles.trees import plain_files
from benchgen.bundles.yaml_nodes import (
    MAX_YAML_BYTES,
    NOT_TEXT,
    NOT_TEXT_MSG,
    BoundedLoader,
    Lines,
    Loc,
    Problem,
)
from benchgen.core.errors import InvalidInput

_YAML_NAMES = ("competition.yaml", "competition.yml")
_METADATA_NAMES = ("metadata.yaml", "metadata.yml", "metadata")
_MAX_METADATA_BYTES = 64 << 10
_MAX_PAGE_BYTES = 2 << 20
# Of all pages and the terms together: each page entry renders its file again (Markdown takes
# seconds a megabyte), and a small zip can hold many large files that compress to nothing.
MAX_PAGES_BYTES = 4 << 20
# Finder and macOS zip leave these beside the real top folder; they never hold bundle content.
_NOISE = {"__MACOSX", ".DS_Store"}


@dataclass(frozen=True)
class ProgramSpec:
    """A program folder (where its metadata is) and its command; `source` is bundle-relative."""

    folder: Path
    command: str
    source: str


@dataclass(frozen=True)
class ResolvedTask:
    spec: TaskSpec
    scoring_program: ProgramSpec
    ingestion_program: ProgramSpec | None
    reference_data: Path | None
    input_data: Path | None


@dataclass(frozen=True)
class LoadedBundle:
    """A checked bundle; `root` is the folder holding competition.yaml, pages are (title, html)."""

    root: Path
    competition: CompetitionSpec
    tasks: dict[int, ResolvedTask]
    solutions: dict[int, Path]
    pages: tuple[tuple[str, str], ...]
    terms_html: str


def load_bundle(
    root: Path,
    limits: ArchiveLimits = DEFAULT_LIMITS,
) -> LoadedBundle:
    """Load the bundle extracted into `root`; zips inside it are unpacked under `root`.

    Raises:
        InvalidInput: every problem found (competition.yaml, missing or unsafe paths, programs
            without a command, hostile nested zips), each with its loc and line.
    """
    base = _find_base(root)
    spec, lines = parse_competition_with_lines(_read_competition(base))
    resolver = _Resolver(root, base, lines, limits)
    tasks = {t.index: resolver.task(t, ("tasks", i)) for i, t in enumerate(spec.tasks)}
    solutions = {
        s.index: resolver.folder(s.path, ("solutions", i, "path"))
        for i, s in enumerate(spec.solutions)
    }
    pages = tuple(
        (page.title, resolver.page(page.path, ("pages", i, "file")))
        for i, page in enumerate(spec.pages)
    )
    terms = resolver.page(spec.terms, ("terms",)) if spec.terms else ""
    if resolver.problems:
        count = len(resolver.problems)
        raise InvalidInput(
            f"the bundle has {count} problem{'s' if count > 1 else ''}", resolver.problems
        )
    return LoadedBundle(
        root=base,
        competition=replace(spec, warnings=spec.warnings + _layout_warnings(base, spec, lines)),
        tasks={k: v for k, v in tasks.items() if v is not None},
        solutions={k: v for k, v in solutions.items() if v is not None},
        pages=pages,
        terms_html=terms,
    )


def read_program(folder: Path, loc: Loc, source: str = "", line: int | None = None) -> ProgramSpec:
    """The program in `folder` (or in its single top folder, as zips often wrap it).

    Raises:
        InvalidInput: no metadata.yaml / metadata file, or it has no `command`.
    """
    home = _metadata_home(folder)
    if home is None:
        raise _problem(loc, line, f"'{source}' has no metadata.yaml (or metadata) file")
    home_folder, metadata = home
    raw = metadata.read_bytes()[: _MAX_METADATA_BYTES + 1]
    command = _command(raw) if len(raw) <= _MAX_METADATA_BYTES else None
    if command is None:
        msg = f"'{source}/{metadata.name}' must be a small YAML mapping with a 'command'"
        raise _problem(loc, line, msg)
    if NOT_TEXT.search(command):
        # No argv can hold either: the program could never start, and would fail every run.
        raise _problem(loc, line, f"the 'command' in '{source}/{metadata.name}' {NOT_TEXT_MSG}")
    return ProgramSpec(folder=home_folder, command=command, source=source)


def _problem(loc: Loc, line: int | None, msg: str) -> InvalidInput:
    return InvalidInput(msg, [{"loc": list(loc), "line": line, "msg": msg}])


def _is_plain(path: Path, kind: int) -> bool:
    """Whether `path` is of `kind` (S_IFREG/S_IFDIR) itself, never through a link."""
    try:
        return stat.S_IFMT(path.lstat().st_mode) == kind
    except OSError:
        return False


def _content(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name not in _NOISE and not p.name.startswith(".")]


def _find_base(root: Path) -> Path:
    # People zip either the bundle's content or the bundle folder itself: accept both.
    candidates = [root]
    entries = _content(root)
    if len(entries) == 1 and _is_plain(entries[0], stat.S_IFDIR):
        candidates.append(entries[0])
    for base in candidates:
        if any(_is_plain(base / name, stat.S_IFREG) for name in _YAML_NAMES):
            return base
    msg = "no competition.yaml at the top of the bundle or in its single top folder"
    raise _problem(("competition.yaml",), None, msg)


def _layout_warnings(base: Path, spec: CompetitionSpec, lines: Lines) -> tuple[Problem, ...]:
    """What loads as Codabench loads it, yet is likely a slip: a second YAML file, a lost logo."""
    found = []
    if all(_is_plain(base / name, stat.S_IFREG) for name in _YAML_NAMES):
        msg = "competition.yml is ignored: competition.yaml is read, as Codabench does"
        found.append(Problem(("competition.yml",), None, msg))
    if spec.image is not None and not _is_plain(base / spec.image, stat.S_IFREG):
        msg = f"'{spec.image}' is not a file of the bundle; the competition has no logo"
        found.append(Problem(("image",), lines.get(("image",)), msg))
    return tuple(found)


def _read_competition(base: Path) -> str:
    path = next(base / n for n in _YAML_NAMES if _is_plain(base / n, stat.S_IFREG))
    with path.open("rb") as handle:
        raw = handle.read(MAX_YAML_BYTES + 1)
    if len(raw) > MAX_YAML_BYTES:
        raise _problem((path.name,), None, f"larger than {MAX_YAML_BYTES} bytes")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # Where: an editor saving one accented letter as Latin-1 leaves one such byte. The
        # offset is into `exc.object`, the text after any byte order mark.
        text, start = exc.object, exc.start
        msg = f"{path.name} must be UTF-8 text: byte 0x{text[start]:02x} on this line is not"
        line = text.count(b"\n", 0, start) + 1
        raise _problem((path.name,), line, msg) from exc


def _metadata_home(folder: Path) -> tuple[Path, Path] | None:
    for home in (folder, *_single_folder(folder)):
        for name in _METADATA_NAMES:
            if _is_plain(home / name, stat.S_IFREG):
                return home, home / name
    return None


def _single_folder(folder: Path) -> list[Path]:
    entries = _content(folder)
    return entries if len(entries) == 1 and _is_plain(entries[0], stat.S_IFDIR) else []


def _command(raw: bytes) -> str | None:
    try:
        loader = _MetadataLoader(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return None
    try:
        data: Any = loader.get_single_data()
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    command = data.get("command") if isinstance(data, dict) else None
    return command.strip() if isinstance(command, str) and command.strip() else None


class _MetadataLoader(BoundedLoader):
    # Aliases are the one way a small YAML file expands to gigabytes; metadata never needs them.
    max_aliases = 0


class _Resolver:
    """Finds each path the YAML names, unpacking zips once each, and collects every problem."""

    def __init__(self, root: Path, base: Path, lines: Lines, limits: ArchiveLimits) -> None:
        self.root, self.base, self.lines, self.limits = root, base, lines, limits
        self.problems: list[dict[str, Any]] = []
        self.unpacked: dict[str, Path] = {}
        self.unpack_root: Path | None = None
        # Nested zips share the upload's limits: what the bundle already holds counts against them.
        files = plain_files(root, limits.max_path_parts)
        self.bytes_left = limits.max_total_bytes - sum((root / f).lstat().st_size for f in files)
        self.files_left = limits.max_files - len(files)
        self.page_bytes_left = MAX_PAGES_BYTES

    def problem(self, loc: Loc, msg: str) -> None:
        self.problems.append({"loc": list(loc), "line": self.lines.get(loc), "msg": msg})

    def task(self, spec: TaskSpec, loc: Loc) -> ResolvedTask | None:
        scoring = self.program(spec.scoring_program, (*loc, "scoring_program"))
        ingestion = self.program(spec.ingestion_program, (*loc, "ingestion_program"))
        reference = self.optional_folder(spec.reference_data, (*loc, "reference_data"))
        inputs = self.optional_folder(spec.input_data, (*loc, "input_data"))
        if scoring is None:
            return None
        return ResolvedTask(spec, scoring, ingestion, reference, inputs)

    def program(self, rel: str | None, loc: Loc) -> ProgramSpec | None:
        folder = self.optional_folder(rel, loc)
        if folder is None or rel is None:
            return None
        try:
            return read_program(folder, loc, rel, self.lines.get(loc))
        except InvalidInput as exc:
            self.problems.extend(exc.errors)
            return None

    def optional_folder(self, rel: str | None, loc: Loc) -> Path | None:
        return None if rel is None else self.folder(rel, loc)

    def locate(self, rel: str, loc: Loc) -> Path | None:
        """The entry at bundle-relative `rel`, reached without passing through any link."""
        current = self.base
        for part in rel.split("/"):
            current = current / part
            try:
                mode = current.lstat().st_mode
            except OSError:
                self.problem(loc, f"'{rel}' is not in the bundle")
                return None
            # A link could point anywhere on the host; the YAML may only name real bundle entries.
            if stat.S_ISLNK(mode):
                self.problem(loc, f"'{rel}' goes through a symbolic link")
                return None
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            self.problem(loc, f"'{rel}' is neither a file nor a folder")
            return None
        return current

    def folder(self, rel: str, loc: Loc) -> Path | None:
        """A folder of the bundle, or a zip of the bundle unpacked to a folder (once)."""
        path = self.locate(rel, loc)
        if path is None or _is_plain(path, stat.S_IFDIR):
            return path
        if rel in self.unpacked:
            return self.unpacked[rel]
        if not is_zip(path):
            self.problem(loc, f"'{rel}' must be a folder or a .zip")
            return None
        return self.unpack(path, rel, loc)

    def unpack(self, path: Path, rel: str, loc: Loc) -> Path | None:
        if self.unpack_root is None:
            # mkdtemp: a fresh name, so a bundle that ships its own ".unpacked" cannot collide.
            self.unpack_root = Path(tempfile.mkdtemp(prefix=".unpacked-", dir=self.root))
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", rel)[:80]
        dest = self.unpack_root / f"{len(self.unpacked)}-{safe}"
        dest.mkdir()
        limits = replace(self.limits, max_total_bytes=self.bytes_left, max_files=self.files_left)
        try:
            names = extract_zip(path, dest, limits, loc=rel, depth=1)
        except InvalidInput as exc:
            for error in exc.errors:
                self.problem(loc, f"{rel}: {error['msg']}")
            return None
        self.bytes_left -= sum((dest / name).lstat().st_size for name in names)
        self.files_left -= len(names)
        self.unpacked[rel] = dest
        return dest

    def page(self, rel: str, loc: Loc) -> str:
        path = self.locate(rel, loc)
        if path is None:
            return ""
        if not _is_plain(path, stat.S_IFREG):
            self.problem(loc, f"'{rel}' must be a file")
            return ""
        with path.open("rb") as handle:
            raw = handle.read(_MAX_PAGE_BYTES + 1)
        if len(raw) > _MAX_PAGE_BYTES:
            self.problem(loc, f"'{rel}' is larger than {_MAX_PAGE_BYTES} bytes")
            return ""
        if len(raw) > self.page_bytes_left:
            msg = f"'{rel}': the pages and terms together are larger than {MAX_PAGES_BYTES} bytes"
            self.problem(loc, msg)
            return ""
        self.page_bytes_left -= len(raw)
        return render_page(rel, raw)
