"""Bounded YAML composing, and typed readers over the nodes that note each line and problem."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from benchgen.core.errors import InvalidInput

Loc = tuple[str | int, ...]
Lines = dict[Loc, int]

MAX_YAML_BYTES = 1 << 20
# Anchors/aliases let a few lines expand to gigabytes ("billion laughs"); real bundles use none.
_MAX_ALIASES = 32
_MAX_PLAIN_NODES = 50_000
_MAX_DEPTH = 32
# Indexes, caps and limits: stored as 32-bit integers or in names of bounded length ("bundle:7").
MAX_INTEGER = 2**31 - 1
# YAML's "\ud800" escape makes a lone surrogate: Python holds it, but it is not text, and
# UTF-8 (the database, JSON, a page) cannot encode it. Its "\0" makes a NUL, which PostgreSQL
# text and JSON cannot hold.
NOT_TEXT = re.compile("[\x00\ud800-\udfff]")
NOT_TEXT_MSG = "holds a NUL (U+0000) or a lone surrogate (U+D800 to U+DFFF), which is not text"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_SCALAR_TAGS = {
    "tag:yaml.org,2002:" + name for name in ("str", "int", "float", "bool", "null", "timestamp")
}


@dataclass(frozen=True)
class Problem:
    """One error or warning, at a place in the YAML (`loc`) and its 1-based line."""

    loc: Loc
    line: int | None
    msg: str

    def as_error(self) -> dict[str, Any]:
        return {"loc": list(self.loc), "line": self.line, "msg": self.msg}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Problem:
        return cls(tuple(data["loc"]), data["line"], data["msg"])


class BoundedLoader(yaml.SafeLoader):
    """SafeLoader refusing more than `max_aliases` aliases or nesting deeper than `_MAX_DEPTH`.

    Both checks run as nodes are composed, so a hostile document is refused before PyYAML's
    scanner (quadratic in nesting depth) or its recursive composer get far into it.
    """

    max_aliases = _MAX_ALIASES
    aliases = 0
    depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > self.max_aliases:
                raise yaml.YAMLError(f"more than {self.max_aliases} aliases (*name) are refused")
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                raise yaml.YAMLError(f"nested more than {_MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def compose(text: str) -> Node:
    """The one YAML node of competition.yaml `text`, composed within the size and nesting caps."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_YAML_BYTES:
        raise _single([], None, f"competition.yaml is larger than {MAX_YAML_BYTES} bytes")
    loader = BoundedLoader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise _single([], line, f"not valid YAML: {exc.problem or exc}") from exc
    except yaml.YAMLError as exc:
        raise _single([], None, f"not valid YAML: {exc}") from exc
    finally:
        loader.dispose()
    if node is None:
        raise _single([], None, "competition.yaml is empty")
    return node


def _single(loc: list[str | int], line: int | None, msg: str) -> InvalidInput:
    return InvalidInput("competition.yaml has 1 problem", [{"loc": loc, "line": line, "msg": msg}])


def _line(node: Node) -> int:
    return int(node.start_mark.line) + 1


@dataclass(frozen=True)
class Section:
    """A YAML mapping being read: its place, the line it starts on, and its values by key."""

    loc: Loc
    line: int
    values: dict[str, Node]


class NodeReader:
    """Reads typed values out of composed YAML, recording lines, errors and warnings as it goes."""

    def __init__(self) -> None:
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []
        self.lines: Lines = {}
        self._plain_left = _MAX_PLAIN_NODES
        self._constructor = SafeConstructor()

    def error(self, loc: Loc, line: int | None, msg: str) -> None:
        self.errors.append(Problem(loc, line, msg))

    def line_of(self, loc: Loc, fallback: int) -> int:
        return self.lines.get(loc, fallback)

    def section(self, node: Node, loc: Loc, used: frozenset[str], known: frozenset[str]) -> Section:
        if not isinstance(node, MappingNode):
            self.error(loc, _line(node), "expected a mapping of keys to values")
            return Section(loc, _line(node), {})
        merged = self._merge(node, loc)
        values: dict[str, Node] = {}
        own: set[str] = set()  # keys written here, not merged in: they override merged ones
        for position, (key_node, value) in enumerate(node.value):
            if not isinstance(key_node, ScalarNode):
                self.error(loc, _line(key_node), "keys must be plain text")
                continue
            key = str(key_node.value)
            if NOT_TEXT.search(key):
                self.error(loc, _line(key_node), f"a key {NOT_TEXT_MSG}")
                continue
            self.lines[(*loc, key)] = _line(key_node)
            if key in own:
                self.warn((*loc, key), key_node, f"'{key}' appears twice; the last one is used")
            elif key not in values and key not in used and key not in known:
                self.warn((*loc, key), key_node, f"unknown key '{key}' is not used")
            if position >= merged:
                own.add(key)
            values[key] = value
        return Section(loc, _line(node), values)

    def _merge(self, node: MappingNode, loc: Loc) -> int:
        """Resolve YAML merge keys (`<<: *defaults`) in `node` as PyYAML, Codabench's loader,
        does; the number of merged pairs, which come first (in the order that lets the last
        win)."""
        own = sum(1 for key, _ in node.value if key.tag != _MERGE_TAG)
        try:
            self._constructor.flatten_mapping(node)
        except ConstructorError as exc:
            mark = exc.problem_mark
            line = mark.line + 1 if mark else _line(node)
            self.error(loc, line, "a merge ('<<') must name a mapping or a list of mappings")
            node.value = [pair for pair in node.value if pair[0].tag != _MERGE_TAG]
        return len(node.value) - own

    def warn(self, loc: Loc, node: Node, msg: str) -> None:
        self.warnings.append(Problem(loc, _line(node), msg))

    def scalar(self, node: Node, loc: Loc, expected: str) -> tuple[bool, Any]:
        if not isinstance(node, ScalarNode) or node.tag not in _SCALAR_TAGS:
            self.error(loc, _line(node), f"expected {expected}")
            return False, None
        if NOT_TEXT.search(str(node.value)):
            self.error(loc, _line(node), f"the value {NOT_TEXT_MSG}")
            return False, None
        # Dates are kept as their text, for competition.py's rules (parse_date), not YAML 1.1's.
        if node.tag.endswith(":timestamp"):
            return True, str(node.value)
        try:
            return True, self._constructor.construct_object(node)
        except ValueError:  # an integer past Python's digit limit for str -> int
            self.error(loc, _line(node), f"expected {expected}")
            return False, None

    def value(self, s: Section, key: str) -> Node | None:
        node = s.values.get(key)
        if node is None or (isinstance(node, ScalarNode) and node.tag.endswith(":null")):
            return None
        return node

    def text(self, s: Section, key: str, *, required: bool = False) -> str | None:
        node, loc = self.value(s, key), (*s.loc, key)
        if node is None:
            if required:
                self.error(loc, self.line_of(loc, s.line), f"'{key}' is required")
            return None
        ok, _ = self.scalar(node, loc, "text")
        if not ok:
            return None
        if required and not str(node.value).strip():
            self.error(loc, _line(node), f"'{key}' must not be empty")
        return str(node.value)

    def integer(
        self, s: Section, key: str, minimum: int = 0, maximum: int = MAX_INTEGER
    ) -> int | None:
        node, loc = self.value(s, key), (*s.loc, key)
        if node is None:
            return None
        ok, value = self.scalar(node, loc, "a whole number")
        if not ok:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            self.error(loc, _line(node), "expected a whole number")
            return None
        if value < minimum:
            self.error(loc, _line(node), f"must be {minimum} or more")
            return None
        if value > maximum:
            self.error(loc, _line(node), f"must be {maximum} or less")
            return None
        return value

    def flag(self, s: Section, key: str) -> bool:
        node, loc = self.value(s, key), (*s.loc, key)
        if node is None:
            return False
        ok, value = self.scalar(node, loc, "true or false")
        if ok and not isinstance(value, bool):
            self.error(loc, _line(node), "expected true or false")
        return value is True

    def indexes(self, s: Section, key: str) -> tuple[int, ...]:
        node, loc = self.value(s, key), (*s.loc, key)
        if node is None:
            return ()
        if not isinstance(node, SequenceNode):
            self.error(loc, _line(node), "expected a list of indexes")
            return ()
        found: list[int] = []
        for position, item in enumerate(node.value):
            self.lines[(*loc, position)] = _line(item)
            ok, value = self.scalar(item, (*loc, position), "an index (a whole number)")
            if ok and isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                found.append(value)
            elif ok:
                self.error((*loc, position), _line(item), "expected an index (0 or more)")
        return tuple(found)

    def choice(self, s: Section, key: str, options: tuple[str, ...]) -> str | None:
        text = self.text(s, key)
        if text is None or text.strip().lower() in options:
            return None if text is None else text.strip().lower()
        loc = (*s.loc, key)
        self.error(loc, self.line_of(loc, s.line), f"must be one of: {', '.join(options)}")
        return None

    def items(self, s: Section, key: str, most: int | None = None) -> list[tuple[Loc, Node]]:
        node, loc = self.value(s, key), (*s.loc, key)
        if node is None:
            return []
        if not isinstance(node, SequenceNode):
            self.error(loc, _line(node), "expected a list")
            return []
        if most is not None and len(node.value) > most:
            self.error(loc, _line(node), f"at most {most} are allowed (it has {len(node.value)})")
        for position, item in enumerate(node.value):
            self.lines[(*loc, position)] = _line(item)
        return [((*loc, position), item) for position, item in enumerate(node.value)]

    def plain(self, node: Node, loc: Loc, depth: int = 0) -> Any:
        """A JSON-able copy of a value this parser does not model (kept in `extra`)."""
        self._plain_left -= 1
        if depth > _MAX_DEPTH or self._plain_left < 0:
            if self._plain_left == -1 or depth == _MAX_DEPTH + 1:
                self.error(loc, _line(node), "value nested too deeply or too large")
            return None
        if isinstance(node, MappingNode):
            self._merge(node, loc)
            found: dict[str, Any] = {}
            for k, v in node.value:
                if not isinstance(k, ScalarNode):
                    continue
                if NOT_TEXT.search(str(k.value)):
                    # Kept, such a key could be neither stored nor sent back as JSON; the
                    # problem's place is the mapping, since the key itself cannot be shown.
                    self.error(loc, _line(k), f"a key {NOT_TEXT_MSG}")
                    continue
                found[str(k.value)] = self.plain(v, (*loc, str(k.value)), depth + 1)
            return found
        if isinstance(node, SequenceNode):
            return [self.plain(v, (*loc, i), depth + 1) for i, v in enumerate(node.value)]
        return self.scalar(node, loc, "a plain value")[1]
