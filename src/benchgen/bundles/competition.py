"""Parse and validate a Codabench v2 competition.yaml into frozen values, reporting every problem.

Dates: ISO (`2026-01-01`, `2026-01-01 12:00`, `2026-01-01T12:00:00+02:00`) or month-day-year
(`1-31-2026`, `1/31/2026`, as in Codabench's published examples); a date without a zone is UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from benchgen.bundles.yaml_nodes import Lines, Loc, NodeReader, Problem, Section, compose
from benchgen.core.errors import InvalidInput
from benchgen.core.text import MAX_DESCRIPTION, MAX_TITLE, is_blank, line_problem, text_problem

COMPUTATIONS = ("sum", "avg", "min", "max")
SORTINGS = ("desc", "asc")

_TOP_USED = frozenset(
    {"version", "title", "description", "image", "docker_image", "terms", "pages", "phases"}
    | {"tasks", "solutions", "leaderboard", "leaderboards"}
)
# Codabench keys this platform does not act on: kept in `extra`, no warning.
KEPT_TOP_LEVEL_KEYS = frozenset(
    {"registration_auto_approve", "enable_detailed_results", "queue", "fact_sheet", "reward"}
    | {"show_detailed_results_in_submission_panel", "show_detailed_results_in_leaderboard"}
    | {"auto_run_submissions", "can_participants_make_submissions_public", "contact_email"}
    | {"make_programs_available", "make_input_data_available", "report", "forum_enabled"}
)
ACCEPTED_TOP_LEVEL_KEYS = _TOP_USED | KEPT_TOP_LEVEL_KEYS
_PHASE_USED = frozenset(
    {"index", "name", "description", "start", "end", "tasks", "max_submissions"}
    | {"max_submissions_per_day", "execution_time_limit"}
)
_PHASE_KNOWN = frozenset(
    {"starting_kit", "public_data", "solutions", "auto_migrate_to_this_phase", "hide_output"}
    | {"hide_prediction_output", "hide_score_output", "has_max_submissions", "is_final_phase"}
    | {"max_submissions_per_person", "status"}
)
_TASK_USED = frozenset(
    {"index", "name", "description", "scoring_program", "ingestion_program", "reference_data"}
    | {"input_data", "ingestion_only_during_scoring"}
)
_TASK_KNOWN = frozenset({"is_public", "key", "created_when"})
_SOLUTION_KEYS = frozenset({"index", "name", "path", "tasks"})
_SOLUTION_KNOWN = frozenset({"description", "key", "md5"})
_BOARD_USED = frozenset({"index", "key", "title", "columns"})
_BOARD_KNOWN = frozenset({"submission_rule", "hidden"})
_COLUMN_USED = frozenset(
    {"key", "title", "index", "sorting", "computation", "computation_indexes", "precision"}
    | {"hidden"}
)
_PAGE_USED = frozenset({"title", "file"})

_DATE = re.compile(
    r"(?:(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"
    r"|(?P<m2>\d{1,2})(?P<sep>[-/])(?P<d2>\d{1,2})(?P=sep)(?P<y2>\d{4}))"
    r"(?:[Tt ]+(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.(?P<f>\d+))?)?)?"
    r"\s*(?P<tz>[Zz]|[+-]\d{1,2}(?::?\d{2})?)?"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Each phase and task becomes rows written in one transaction at upload (every phase its task
# links), each page a rendering, each column a leaderboard cell per run: published bundles
# have a handful of each; these bounds keep a 1 MiB YAML from asking for tens of thousands.
MAX_PHASES, MAX_TASKS, MAX_PAGES, MAX_COLUMNS = 100, 500, 100, 200
# Docker's longest reference: a 255-character name, ':' and a 128-character tag, '@' and a digest.
MAX_DOCKER_IMAGE = 255 + 1 + 128 + 1 + 71


@dataclass(frozen=True)
class ColumnSpec:
    """A leaderboard column: a score the scoring program writes, or a computation over others."""

    key: str
    title: str
    index: int
    sorting: str = "desc"
    computation: str | None = None
    computation_indexes: tuple[int, ...] = ()
    precision: int | None = None
    hidden: bool = False


@dataclass(frozen=True)
class LeaderboardSpec:
    index: int
    key: str
    title: str
    columns: tuple[ColumnSpec, ...]


@dataclass(frozen=True)
class PhaseSpec:
    index: int
    name: str
    description: str
    start: datetime | None
    end: datetime | None
    tasks: tuple[int, ...]
    max_submissions: int | None = None
    max_submissions_per_day: int | None = None
    execution_time_limit: int | None = None


@dataclass(frozen=True)
class TaskSpec:
    """Bundle-relative paths (normalised, no trailing slash) to folders or zips."""

    index: int
    name: str
    description: str
    scoring_program: str | None
    ingestion_program: str | None = None
    reference_data: str | None = None
    input_data: str | None = None
    ingestion_only_during_scoring: bool = False


@dataclass(frozen=True)
class SolutionSpec:
    index: int
    name: str
    path: str
    tasks: tuple[int, ...]


@dataclass(frozen=True)
class PageSpec:
    title: str
    path: str


@dataclass(frozen=True)
class CompetitionSpec:
    """A validated competition.yaml; `extra` keeps top-level keys this platform does not model."""

    title: str
    description: str
    image: str | None
    docker_image: str | None
    terms: str | None
    pages: tuple[PageSpec, ...]
    phases: tuple[PhaseSpec, ...]
    tasks: tuple[TaskSpec, ...]
    solutions: tuple[SolutionSpec, ...]
    leaderboards: tuple[LeaderboardSpec, ...]
    extra: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[Problem, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (dates as ISO text) that `from_json` turns back into an equal spec."""
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["pages"] = [_fields(p) for p in self.pages]
        data["phases"] = [_phase_json(p) for p in self.phases]
        data["tasks"] = [_fields(t) for t in self.tasks]
        data["solutions"] = [_fields(s) | {"tasks": list(s.tasks)} for s in self.solutions]
        data["leaderboards"] = [_board_json(b) for b in self.leaderboards]
        data["warnings"] = [w.as_error() for w in self.warnings]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CompetitionSpec:
        return cls(
            **{k: data[k] for k in ("title", "description", "image", "docker_image", "terms")},
            pages=tuple(PageSpec(**p) for p in data["pages"]),
            phases=tuple(_phase_from_json(p) for p in data["phases"]),
            tasks=tuple(TaskSpec(**t) for t in data["tasks"]),
            solutions=tuple(
                SolutionSpec(**(s | {"tasks": tuple(s["tasks"])})) for s in data["solutions"]
            ),
            leaderboards=tuple(_board_from_json(b) for b in data["leaderboards"]),
            extra=dict(data["extra"]),
            warnings=tuple(Problem.from_json(w) for w in data["warnings"]),
        )


def _fields(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__dataclass_fields__}


def _phase_json(phase: PhaseSpec) -> dict[str, Any]:
    data = _fields(phase) | {"tasks": list(phase.tasks)}
    for name in ("start", "end"):
        data[name] = data[name].isoformat() if data[name] else None
    return data


def _phase_from_json(data: dict[str, Any]) -> PhaseSpec:
    dates = {k: datetime.fromisoformat(data[k]) if data[k] else None for k in ("start", "end")}
    return PhaseSpec(**(data | dates | {"tasks": tuple(data["tasks"])}))


def _board_json(board: LeaderboardSpec) -> dict[str, Any]:
    columns = [
        _fields(c) | {"computation_indexes": list(c.computation_indexes)} for c in board.columns
    ]
    return _fields(board) | {"columns": columns}


def _board_from_json(data: dict[str, Any]) -> LeaderboardSpec:
    columns = tuple(
        ColumnSpec(**(c | {"computation_indexes": tuple(c["computation_indexes"])}))
        for c in data["columns"]
    )
    return LeaderboardSpec(data["index"], data["key"], data["title"], columns)


def parse_competition(text: str) -> CompetitionSpec:
    """Parse competition.yaml text.

    Raises:
        InvalidInput: "competition.yaml has N problems", one error (loc, line, msg) per problem.
    """
    return parse_competition_with_lines(text)[0]


def parse_competition_with_lines(text: str) -> tuple[CompetitionSpec, Lines]:
    """Like `parse_competition`, plus the 1-based line of every key and list item, by loc."""
    reader = _Reader()
    spec = reader.competition(compose(text))
    if reader.errors:
        problems = sorted(reader.errors, key=lambda p: (p.line or 0, [str(x) for x in p.loc]))
        count = len(problems)
        noun = "problem" if count == 1 else "problems"
        raise InvalidInput(f"competition.yaml has {count} {noun}", [p.as_error() for p in problems])
    return spec, reader.lines


def safe_relative_path(text: str) -> str | None:
    """The normalised bundle-relative form of `text`, or None if it could leave the bundle."""
    if not text or "\\" in text or _CONTROL.search(text) or text.startswith("/"):
        return None
    if re.match(r"^[A-Za-z]:", text):
        return None
    parts = [part for part in text.split("/") if part not in {"", "."}]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def parse_date(text: str) -> datetime | None:
    """A timezone-aware UTC datetime from the accepted date forms (module docstring), or None."""
    match = _DATE.fullmatch(text.strip())
    if not match:
        return None
    g = match.groupdict()
    year, month, day = (int(g[a] or g[b]) for a, b in (("y", "y2"), ("m", "m2"), ("d", "d2")))
    micro = int((g["f"] or "0")[:6].ljust(6, "0"))
    try:
        moment = datetime(
            year, month, day, int(g["H"] or 0), int(g["M"] or 0), int(g["S"] or 0), micro
        )
        zone = _zone(g["tz"])
        return moment.replace(tzinfo=zone).astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: an offset past year 1 or 9999
        return None


def _zone(text: str | None) -> timezone:
    if not text or text in {"Z", "z"}:
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = (digits, "0") if len(digits) <= 2 else (digits[:-2], digits[-2:])
    return timezone(sign * timedelta(hours=int(hours), minutes=int(minutes)))


class _Reader(NodeReader):
    """Walks the composed YAML once into a CompetitionSpec, by Codabench's rules."""

    def date(self, s: Section, key: str) -> datetime | None:
        text = self.text(s, key)
        if text is None:
            return None
        moment = parse_date(text)
        if moment is None:
            loc = (*s.loc, key)
            self.error(
                loc, self.line_of(loc, s.line), "expected a date like 2026-01-31 or 1-31-2026"
            )
        return moment

    def path(self, s: Section, key: str, *, required: bool = False) -> str | None:
        text = self.text(s, key, required=required)
        if text is None:
            return None
        path = safe_relative_path(text.strip())
        if path is None:
            loc = (*s.loc, key)
            msg = "must be a path inside the bundle (no '..', leading '/' or backslashes)"
            self.error(loc, self.line_of(loc, s.line), msg)
        return path

    def line(
        self, s: Section, key: str, *, required: bool = False, limit: int = MAX_TITLE
    ) -> str | None:
        """A title or name: one line, by the checks every stored name gets (core/text.py)."""
        text = self.text(s, key, required=required)
        if text is None or not text.strip():
            return None
        text = text.strip()
        problem = line_problem(text) or _too_long(text, limit)
        if problem is None and is_blank(text):
            problem = "must hold something visible"
        return self._checked(s, key, text, problem)

    def key(self, s: Section) -> str:
        """A leaderboard's or column's key: a name readers see (it is the title when none is
        given, and a column's key heads its scores), so it gets a name's checks, never cut."""
        text = self.text(s, "key", required=True)
        if not text or not text.strip():
            return ""
        return self._checked(s, "key", text, line_problem(text) or _too_long(text, MAX_TITLE)) or ""

    def prose(self, s: Section, key: str) -> str | None:
        """A description: line breaks allowed, no control or bidirectional characters."""
        text = self.text(s, key)
        if text is None:
            return None
        return self._checked(s, key, text, text_problem(text) or _too_long(text, MAX_DESCRIPTION))

    def _checked(self, s: Section, key: str, text: str, problem: str | None) -> str | None:
        if problem is None:
            return text
        loc = (*s.loc, key)
        self.error(loc, self.line_of(loc, s.line), problem)
        return None

    def competition(self, root: Node) -> CompetitionSpec:
        top = self.section(root, (), _TOP_USED, KEPT_TOP_LEVEL_KEYS)
        self.version(top)
        listed_tasks = self.items(top, "tasks", MAX_TASKS)
        tasks = self.unique([self.task(loc, node) for loc, node in listed_tasks])
        listed_phases = self.items(top, "phases", MAX_PHASES)
        phases = self.unique([self.phase(loc, node) for loc, node in listed_phases])
        solutions = [self.solution(loc, node) for loc, node in self.items(top, "solutions")]
        boards = self.leaderboards(top)
        self.require_some(top, "tasks", tasks, "at least one task is required")
        self.require_some(top, "phases", phases, "at least one phase is required")
        known_tasks = {spec.index for spec, _ in tasks}
        for spec, s in [*phases, *self.unique(solutions)]:
            self.check_task_refs(s, spec.tasks, known_tasks)
        return CompetitionSpec(
            title=self.line(top, "title", required=True) or "",
            description=self.prose(top, "description") or "",
            image=self.path(top, "image"),
            # Shown on the benchmark's pages: one line, checked as a name is.
            docker_image=self.line(top, "docker_image", limit=MAX_DOCKER_IMAGE),
            terms=self.path(top, "terms"),
            pages=tuple(self.page(loc, node) for loc, node in self.items(top, "pages", MAX_PAGES)),
            phases=_specs(phases),
            tasks=_specs(tasks),
            solutions=_specs(solutions),
            leaderboards=_specs(boards),
            extra={k: self.plain(v, (k,)) for k, v in top.values.items() if k not in _TOP_USED},
            warnings=tuple(sorted(self.warnings, key=lambda p: p.line or 0)),
        )

    def version(self, top: Section) -> None:
        node = top.values.get("version")
        if node is None or not isinstance(node, ScalarNode) or str(node.value).strip() != "2":
            line = self.line_of(("version",), top.line)
            self.error(("version",), line, "only Codabench v2 bundles are accepted: 'version: 2'")

    def require_some(self, top: Section, key: str, found: list[Any], msg: str) -> None:
        if not found:
            self.error((key,), self.line_of((key,), top.line), msg)

    def unique(self, found: list[tuple[Any, Section]], attr: str = "index") -> list[Any]:
        seen: set[Any] = set()
        for spec, s in found:
            value = getattr(spec, attr)
            if value in seen:
                loc = (*s.loc, attr)
                self.error(loc, self.line_of(loc, s.line), f"{attr} {value!r} is used twice")
            seen.add(value)
        return found

    def check_task_refs(self, s: Section, refs: tuple[int, ...], known: set[int]) -> None:
        for position, ref in enumerate(refs):
            if ref not in known:
                loc = (*s.loc, "tasks", position)
                self.error(loc, self.line_of(loc, s.line), f"no task has index {ref}")

    def index(self, s: Section) -> int:
        found = self.integer(s, "index")
        position = s.loc[-1]
        return found if found is not None else position if isinstance(position, int) else 0

    def task(self, loc: Loc, node: Node) -> tuple[TaskSpec, Section]:
        s = self.section(node, loc, _TASK_USED, _TASK_KNOWN)
        index = self.index(s)
        spec = TaskSpec(
            index=index,
            name=self.line(s, "name") or f"Task {index}",
            description=self.prose(s, "description") or "",
            scoring_program=self.path(s, "scoring_program", required=True),
            ingestion_program=self.path(s, "ingestion_program"),
            reference_data=self.path(s, "reference_data"),
            input_data=self.path(s, "input_data"),
            ingestion_only_during_scoring=self.flag(s, "ingestion_only_during_scoring"),
        )
        if spec.ingestion_only_during_scoring:
            # Codabench then runs both programs at once, talking to each other; here the
            # ingestion program ends before scoring starts, so such a bundle would wait forever.
            at = (*loc, "ingestion_only_during_scoring")
            self.error(
                at,
                self.line_of(at, s.line),
                "running the ingestion program during scoring is not supported: here it runs "
                "first and ends before the scoring program starts",
            )
        return spec, s

    def phase(self, loc: Loc, node: Node) -> tuple[PhaseSpec, Section]:
        s = self.section(node, loc, _PHASE_USED, _PHASE_KNOWN)
        index = self.index(s)
        start, end = self.date(s, "start"), self.date(s, "end")
        if start and end and start > end:
            end_loc = (*loc, "end")
            self.error(end_loc, self.line_of(end_loc, s.line), "the phase ends before it starts")
        tasks = self.indexes(s, "tasks")
        listed = self.value(s, "tasks")
        if listed is None or (isinstance(listed, SequenceNode) and not listed.value):
            tasks_loc = (*loc, "tasks")
            self.error(
                tasks_loc, self.line_of(tasks_loc, s.line), "a phase needs at least one task"
            )
        spec = PhaseSpec(
            index=index,
            name=self.line(s, "name") or f"Phase {index}",
            description=self.prose(s, "description") or "",
            start=start,
            end=end,
            tasks=tasks,
            max_submissions=self.cap(s, "max_submissions"),
            max_submissions_per_day=self.cap(s, "max_submissions_per_day"),
            execution_time_limit=self.integer(s, "execution_time_limit", minimum=1),
        )
        return spec, s

    def cap(self, s: Section, key: str) -> int | None:
        """A phase's submission cap; 0 is none, as on Codabench (which never checks a cap of 0):
        published bundles write 0 so, and kept as 0 it would refuse every submission."""
        return self.integer(s, key) or None

    def solution(self, loc: Loc, node: Node) -> tuple[SolutionSpec, Section]:
        s = self.section(node, loc, _SOLUTION_KEYS, _SOLUTION_KNOWN)
        index = self.index(s)
        name = self.line(s, "name") or f"Solution {index}"
        spec = SolutionSpec(
            index, name, self.path(s, "path", required=True) or "", self.indexes(s, "tasks")
        )
        return spec, s

    def page(self, loc: Loc, node: Node) -> PageSpec:
        s = self.section(node, loc, _PAGE_USED, frozenset())
        return PageSpec(
            self.line(s, "title", required=True) or "", self.path(s, "file", required=True) or ""
        )

    def leaderboards(self, top: Section) -> list[tuple[LeaderboardSpec, Section]]:
        keys = [key for key in ("leaderboards", "leaderboard") if key in top.values]
        if len(keys) == 2:
            loc = ("leaderboard",)
            self.error(
                loc, self.line_of(loc, top.line), "use 'leaderboards' or 'leaderboard', not both"
            )
        key = keys[0] if keys else "leaderboards"
        node = self.value(top, key)
        # `leaderboard:` sometimes holds one mapping rather than a list of them.
        found = [((key, 0), node)] if isinstance(node, MappingNode) else self.items(top, key)
        boards = self.unique([self.leaderboard(loc, n) for loc, n in found])
        self.require_some(top, key, boards, "at least one leaderboard is required")
        if len(boards) > 1:
            # Runs are scored and ranked on the first leaderboard only: say so, not drop them.
            _, second = boards[1]
            msg = "only the first leaderboard is used: this one and those after it are ignored"
            self.warnings.append(Problem(second.loc, second.line, msg))
        return self.unique(boards, "key")

    def leaderboard(self, loc: Loc, node: Node) -> tuple[LeaderboardSpec, Section]:
        s = self.section(node, loc, _BOARD_USED, _BOARD_KNOWN)
        key = self.key(s)
        listed = self.items(s, "columns", MAX_COLUMNS)
        found = [self.column(c_loc, c_node) for c_loc, c_node in listed]
        columns = self.unique(self.unique(found), "key")
        if not columns:
            self.error(
                (*loc, "columns"),
                self.line_of((*loc, "columns"), s.line),
                "a leaderboard needs at least one column",
            )
        computed = {other.index for other, _ in columns if other.computation}
        for spec, c in columns:
            self.check_computation(spec, c, {other.index for other, _ in columns}, computed)
        title = self.line(s, "title") or key
        spec = LeaderboardSpec(self.index(s), key, title, _specs(columns))
        return spec, s

    def column(self, loc: Loc, node: Node) -> tuple[ColumnSpec, Section]:
        s = self.section(node, loc, _COLUMN_USED, frozenset())
        key = self.key(s)
        spec = ColumnSpec(
            key=key,
            title=self.line(s, "title") or key,
            index=self.index(s),
            sorting=self.choice(s, "sorting", SORTINGS) or "desc",
            computation=self.choice(s, "computation", COMPUTATIONS),
            computation_indexes=self.indexes(s, "computation_indexes"),
            precision=self.integer(s, "precision"),
            hidden=self.flag(s, "hidden"),
        )
        return spec, s

    def check_computation(
        self, spec: ColumnSpec, s: Section, indexes: set[int], computed: set[int]
    ) -> None:
        loc = (*s.loc, "computation_indexes")
        if spec.computation and not spec.computation_indexes:
            self.error(loc, self.line_of(loc, s.line), "a computation needs computation_indexes")
        for position, ref in enumerate(spec.computation_indexes):
            at = (*loc, position)
            if ref not in indexes or ref == spec.index:
                self.error(at, self.line_of(at, s.line), f"no other column has index {ref}")
            elif spec.computation and ref in computed:
                # Worked out in file order, a computed part would be left out (or, in a cycle,
                # both columns) without a word: only scored columns may be combined.
                msg = f"column {ref} is itself computed; a computation combines scored columns"
                self.error(at, self.line_of(at, s.line), msg)


def _too_long(text: str, limit: int) -> str | None:
    return f"must be at most {limit} characters (it has {len(text)})" if len(text) > limit else None


def _specs(found: list[tuple[Any, Section]]) -> tuple[Any, ...]:
    # File order, not index order: a spec's position is its place in `loc` (and in `lines`).
    return tuple(spec for spec, _ in found)
