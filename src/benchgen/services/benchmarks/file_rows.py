"""Reading uploaded files into numbered rows: JSON lines, CSV and TSV with a header, Parquet and
Arrow; a file that cannot be read is refused at its line (encoding, header, repeated names)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from typing import Any, Literal

from benchgen.core.errors import InvalidInput, invalid, invalid_all
from benchgen.services.specs import MAX_QUESTIONS

FileFormat = Literal["auto", "jsonl", "csv", "parquet", "hf"]
# Decoded columns may be far larger than the compressed upload: past this many bytes in memory a
# Parquet or Arrow file is refused, so a small file cannot expand into gigabytes.
MAX_DECODED_BYTES = 200_000_000
CSV_FIELD_LIMIT = 2**31 - 1  # the largest the csv module takes on every platform
MAX_ROW_PROBLEMS = 100  # enough to fix a file by; a broken file of 10,000 rows lists 100
_PARQUET, _ARROW_FILE, _ARROW_STREAM = b"PAR1", b"ARROW1", b"\xff\xff\xff\xff"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_ZIP = b"PK\x03\x04"
_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_SNIFF = 1000  # bytes read to tell text from UTF-16 and binary files
_NOT_TEXT = "not text; save it as CSV UTF-8 or JSON Lines"
# The kinds read as delimited text with a header row, and what separates their cells.
DELIMITERS = {"csv": ",", "tsv": "\t"}
_SEPARATOR_NAMES = {",": "commas", "\t": "tabs", ";": "semicolons"}
_SHOWN_COLUMNS, _SHOWN_CHARS = 20, 300  # of a header quoted back in a problem


def file_kind(chosen: FileFormat, filename: str, data: bytes) -> str:
    """jsonl, csv, tsv, parquet or arrow: what the bytes are read as."""
    name = filename.lower()
    if chosen in ("auto", "csv") and name.endswith(".tsv"):
        return "tsv"
    if chosen in ("jsonl", "csv", "parquet"):
        return chosen
    if chosen == "auto" and name.endswith(".csv"):
        return "csv"
    if data.startswith(_PARQUET):
        return "parquet"
    if data.startswith((_ARROW_FILE, _ARROW_STREAM)):
        return "arrow"
    return "jsonl"


def read_rows(
    kind: str, data: bytes, max_rows: int = MAX_QUESTIONS
) -> list[tuple[int, dict[str, Any]]]:
    """Each record of the file with its line (JSONL, CSV, TSV) or row (Parquet, Arrow) number.

    Raises:
        InvalidInput: the file cannot be read (loc `["file", line]` for a bad line, the first
            byte that is not UTF-8 included), or a columnar file decodes to more than `max_rows`
            rows or too many bytes.
    """
    if kind in ("parquet", "arrow"):
        records = _columnar(kind, data, max_rows)
        return [(number, record) for number, record in enumerate(records, start=1)]
    text = _utf8_text(data)
    if kind in DELIMITERS:
        return csv_records(text, "file", kind=kind)
    return jsonl_rows(text, "file")


def rows_and_problems(
    kind: str, data: bytes, max_rows: int = MAX_QUESTIONS
) -> tuple[list[tuple[int, dict[str, Any]]], list[dict[str, Any]]]:
    """`read_rows`, with lines that hold no JSON object as problems beside the other rows, so
    their own problems are found in the same pass.

    Raises:
        InvalidInput: as `read_rows`, and when no line holds a JSON object.
    """
    try:
        return read_rows(kind, data, max_rows), []
    except UnreadableLines as exc:
        if not exc.rows:
            raise
        return exc.rows, exc.errors


def require_columns(
    kind: str, columns: Collection[str], required: Sequence[str], field: str = "file"
) -> None:
    """Refuse a CSV or TSV header that lacks any of the `required` columns, once at line 1,
    saying what it has: a wrong header is one problem, not one on every row. Other kinds have
    no header and pass.

    Raises:
        InvalidInput: a required column is missing (loc `[field, 1]`).
    """
    if kind not in DELIMITERS or not set(required) - set(columns):
        return
    word = "column" if len(required) == 1 else "columns"
    has = _shown(list(columns))
    hint = _header_hint(list(columns), required, DELIMITERS[kind])
    raise bad_line(
        1, f"the header needs the {word} {', '.join(required)}; it has {has}{hint}", field
    )


def _shown(columns: list[str]) -> str:
    """A header's names as quoted back, cut short: a header may be one cell of 100,000 chars."""
    shown = ", ".join(repr(name) for name in columns[:_SHOWN_COLUMNS]) or "no columns"
    if len(columns) > _SHOWN_COLUMNS:
        shown += f" and {len(columns) - _SHOWN_COLUMNS} more"
    return shown if len(shown) <= _SHOWN_CHARS else shown[:_SHOWN_CHARS] + "…"


def _header_hint(columns: list[str], required: Sequence[str], delimiter: str) -> str:
    """Why the header may lack the columns: another separator (Excel writes semicolons in many
    locales, tabs for "Unicode text"), or names that differ only in capitals or spaces."""
    joined = "".join(columns)
    for other, name in _SEPARATOR_NAMES.items():
        if other != delimiter and other in joined:
            kind = next((kind for kind, sep in DELIMITERS.items() if sep == other), None)
            read = f"; a file named .{kind} is read with {name}" if kind else ""
            used = _SEPARATOR_NAMES[delimiter]
            return f" (columns must be separated by {used}, not {name}{read})"
    loose = {name.strip().lower() for name in columns}
    if any(name not in columns and name in loose for name in required):
        return " (names must match exactly: capitals and spaces count)"
    return ""


def with_unreadable(
    problems: list[dict[str, Any]], unreadable: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Both kinds of a file's problems in line order, at most MAX_ROW_PROBLEMS."""
    return sorted([*unreadable, *problems], key=lambda problem: problem["loc"][1])[
        :MAX_ROW_PROBLEMS
    ]


def _columnar(kind: str, data: bytes, max_rows: int) -> list[dict[str, Any]]:
    """The rows of a Parquet or Arrow (IPC file or stream) file, read batch by batch."""
    import pyarrow as pa  # loaded only for these files: it is large
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    decoded = 0
    try:
        if kind == "parquet":
            batches = pq.ParquetFile(pa.BufferReader(data)).iter_batches(batch_size=1000)
        elif data.startswith(_ARROW_FILE):
            reader = pa.ipc.open_file(pa.BufferReader(data))
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            batches = iter(pa.ipc.open_stream(pa.BufferReader(data)))
        for batch in batches:
            _refuse_repeated(batch.schema.names)  # as to_pylist would keep the last alone
            # Checked per batch as it is decoded: a compressed column could otherwise expand
            # into far more memory than the upload limit suggests.
            decoded += batch.nbytes
            if decoded > MAX_DECODED_BYTES or len(rows) > max_rows:
                raise invalid(["file"], "decodes to too many rows or bytes")
            rows.extend(batch.to_pylist())
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise invalid(["file"], f"is not a readable {kind} file ({exc})") from None
    except _Repeated as exc:
        raise invalid(["file"], f"the column {exc.name!r} appears {exc.times}") from None
    return rows


def summary(problems: list[dict[str, Any]], kind: str) -> InvalidInput:
    """One error for a file's row problems: the first named in the message, all in `errors`."""
    word = "line" if kind == "jsonl" or kind in DELIMITERS else "row"
    first = problems[0]["loc"]
    if len(first) >= 2 and first[0] in ("file", "content"):
        return invalid_all(problems, f"{word} {first[1]}" + "".join(f".{p}" for p in first[2:]))
    return invalid_all(problems)


class UnreadableLines(InvalidInput):
    """Lines of a JSONL file that hold no JSON object (each in `errors`); `rows` are the other
    lines' objects, so a caller can check them too and report every problem at once."""

    def __init__(self, problems: list[dict[str, Any]], rows: list[tuple[int, dict[str, Any]]]):
        (field, line), more = problems[0]["loc"], len(problems) - 1
        extra = f" (and {more} more)" if more else ""
        super().__init__(f"{field} line {line}: {problems[0]['msg']}{extra}", problems)
        self.rows = rows


def jsonl_rows(content: str, field: str) -> list[tuple[int, dict[str, Any]]]:
    """Each JSON object with its line number.

    Raises:
        UnreadableLines: lines that are no JSON object (up to MAX_ROW_PROBLEMS of them).
    """
    if content.lstrip().startswith("["):
        return _array_rows(content, field)
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[dict[str, Any]] = []
    # "\n" only: str.splitlines would also split inside a JSON string at U+2028 and friends.
    for number, line in enumerate(content.split("\n"), start=1):
        if not line.strip():
            continue
        item = _json_object(line)
        if isinstance(item, str):
            problems.append({"loc": [field, number], "msg": item})
            if len(problems) >= MAX_ROW_PROBLEMS:
                break
        else:
            rows.append((number, item))
    if problems and not rows and _looks_delimited(content):
        first = problems[0]
        first["msg"] += f"; {_LOOKS_DELIMITED}"
    if problems:
        raise UnreadableLines(problems, rows)
    return rows


# Said when a file read as JSON lines has none, and its first line reads as a CSV header: a
# file named .jsonl (or with no name, as a client's upload of bytes) holding CSV.
_LOOKS_DELIMITED = "this looks like CSV: give the file a .csv name, or choose the CSV format"


def _looks_delimited(content: str) -> bool:
    first = content.lstrip().split("\n", 1)[0]
    return not first.startswith(("{", "[")) and ("," in first or "\t" in first)


def _json_object(line: str) -> dict[str, Any] | str:
    """The line's JSON object, or what is wrong with it."""
    try:
        item = json.loads(line, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg})"
    except ValueError:
        # json's only other ValueError: an integer past Python's limit on digits to convert.
        return "not valid JSON (a number has too many digits)"
    except RecursionError:
        return "nested too deeply"
    except _Repeated as exc:
        return f"the key {exc.name!r} appears {exc.times}"
    return _object_problem(item, line, "line") or item


def _object_problem(item: Any, source: str, unit: str) -> str | None:
    """What keeps `item`, decoded from `source`, from being a row: not an object, or a lone
    surrogate in it."""
    if not isinstance(item, dict):
        return f"each {unit} must be one JSON object"
    # Decoded UTF-8 holds no surrogate, so only a "\\u" escape can make one: a lone one is no
    # text that UTF-8 (the stored file, the database) can encode.
    if "\\u" in source and _holds_surrogate(item):
        return "holds a lone surrogate escape (\\ud800 to \\udfff), which is not text"
    return None


def _array_rows(content: str, field: str) -> list[tuple[int, dict[str, Any]]]:
    """Each object of a file that is one JSON array (a `.json` file, as `datasets` writes with
    `lines=False`), with the line it starts on: read as JSON lines, a pretty-printed array
    failed on every line.

    Raises:
        UnreadableLines: items that are no JSON object (up to MAX_ROW_PROBLEMS of them).
        InvalidInput: the array is no valid JSON (at the line where it breaks; nothing after
            that point can be read).
    """
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[dict[str, Any]] = []
    at = _past_space(content, content.index("[") + 1)
    line, counted = 1, 0
    while not content.startswith("]", at):
        # Counted on from the last item: from the start each time is quadratic in the file.
        line, counted = line + content.count("\n", counted, at), at
        item, end = _array_item(decoder, content, at, field)
        problem = _object_problem(item, content[at:end], "item")
        if problem:
            problems.append({"loc": [field, line], "msg": problem})
        else:
            rows.append((line, item))
        at = _past_space(content, end)
        if content.startswith(",", at):
            at = _past_space(content, at + 1)
        elif not content.startswith("]", at):
            raise _broken(content, at, "',' or ']' expected after an item", field)
    if content[at + 1 :].strip():
        raise _broken(
            content,
            _past_space(content, at + 1),
            "more text after the array the file opens with (JSON lines hold one object a line)",
            field,
        )
    if problems:
        raise UnreadableLines(problems[:MAX_ROW_PROBLEMS], rows)
    return rows


def _array_item(decoder: json.JSONDecoder, content: str, at: int, field: str) -> tuple[Any, int]:
    """The JSON value starting at `at` and where it ends."""
    try:
        return decoder.raw_decode(content, at)
    except json.JSONDecodeError as exc:
        raise bad_line(exc.lineno, f"not valid JSON ({exc.msg})", field) from None
    except ValueError:
        raise _broken(content, at, "not valid JSON (a number has too many digits)", field) from None
    except RecursionError:
        raise _broken(content, at, "nested too deeply", field) from None
    except _Repeated as exc:
        raise _broken(content, at, f"the key {exc.name!r} appears {exc.times}", field) from None


def _past_space(content: str, at: int) -> int:
    space = _JSON_SPACE.match(content, at)
    return space.end() if space else at


def _broken(content: str, at: int, message: str, field: str) -> InvalidInput:
    return bad_line(content.count("\n", 0, at) + 1, message, field)


def _holds_surrogate(item: dict[str, Any]) -> bool:
    """Whether a key or string at any depth of `item` holds a lone surrogate (walked without
    recursion: the line may nest as deep as json allows)."""
    waiting: list[Any] = [item]
    while waiting:
        value = waiting.pop()
        if isinstance(value, str) and _SURROGATE.search(value):
            return True
        if isinstance(value, dict):
            waiting.extend(value)
            waiting.extend(value.values())
        elif isinstance(value, list):
            waiting.extend(value)
    return False


class _Repeated(Exception):
    """A name given more than once where each must be given once."""

    def __init__(self, name: str, count: int) -> None:
        super().__init__(name)
        self.name, self.times = name, "twice" if count == 2 else f"{count} times"


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object (at any depth) whose keys are each given once: `json.loads` would keep the
    last of a repeated key, dropping the others' values without a word."""
    found = dict(pairs)
    if len(found) < len(pairs):
        _refuse_repeated([key for key, _ in pairs])
    return found


def _refuse_repeated(names: list[str]) -> None:
    """Raise `_Repeated` for the first of `names` that is given more than once."""
    counts = Counter(names)
    for name in names:
        if counts[name] > 1:
            raise _Repeated(name, counts[name])


def csv_records(
    content: str, field: str, required: Sequence[str] = (), kind: str = "csv"
) -> list[tuple[int, dict[str, Any]]]:
    """Each CSV (or TSV) record as a dict of its cells, with the line it ends on."""
    lines = _Lines(content)
    rows: list[tuple[int, dict[str, Any]]] = []
    opened = 1  # the line the record being read starts on
    # The csv module refuses a cell past 131,072 characters by default, where the same row as
    # JSON lines passes: the upload's own size limit bounds a cell. (A process-wide setting,
    # always set to this one value.)
    csv.field_size_limit(CSV_FIELD_LIMIT)
    try:
        # Strict: an unclosed quote would otherwise swallow the rest of the file silently.
        reader = csv.DictReader(lines, strict=True, delimiter=DELIMITERS[kind])
        _check_header(reader.fieldnames or [], required, kind, field)
        opened = lines.number + 1
        for row in reader:
            if None in row:
                raise bad_line(lines.number, "more cells than header columns", field)
            rows.append((lines.number, dict(row)))
            opened = lines.number + 1
    except csv.Error as exc:
        if lines.exhausted:
            raise bad_line(
                opened, "a quote in the record starting here is never closed", field
            ) from None
        # Too long a field, a stray quote, a NUL: the reader stops on the line it was given last.
        raise bad_line(lines.number, f"not valid CSV ({exc})", field) from None
    return rows


def _check_header(columns: Sequence[str], required: Sequence[str], kind: str, field: str) -> None:
    """Refuse a header that names a column twice or lacks a required one, at line 1."""
    # A reader keeps only the last of same-named columns: the others' cells would be dropped
    # silently. Blank names are exempt: no mapping can name them, so nothing read is lost,
    # and spreadsheets export trailing empty columns.
    try:
        _refuse_repeated([name for name in columns if name.strip()])
    except _Repeated as exc:
        raise bad_line(1, f"the column {exc.name!r} appears {exc.times}", field) from None
    require_columns(kind, columns, required, field)


def _utf8_text(data: bytes) -> str:
    """The file as text, without a leading byte-order mark.

    Raises:
        InvalidInput: the file is not UTF-8: at the line and column of its first bad byte, or
            as a whole when it is UTF-16 (Excel's "Unicode text") or no text at all.
    """
    if _is_utf16(data):
        raise invalid(["file"], "is UTF-16 text; save it as UTF-8 (in Excel: CSV UTF-8)")
    if data.startswith(_ZIP):
        raise invalid(["file"], f"is a zip archive (an Excel workbook is one), {_NOT_TEXT}")
    if b"\0" in data[:_SNIFF]:
        raise invalid(["file"], f"holds binary data (an image, a document?), {_NOT_TEXT}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # exc.object is what was decoded: without the byte-order mark, which no line counts.
        before = exc.object[: exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1 :].decode()) + 1
        byte = exc.object[exc.start]
        message = (
            f"not UTF-8 text at column {column} (byte 0x{byte:02x}): the file may be "
            "Latin-1/Windows-1252 or UTF-16; save it as UTF-8"
        )
        raise bad_line(line, message, "file") from None


def _is_utf16(data: bytes) -> bool:
    """A UTF-16 byte-order mark, or a start that reads as UTF-16 text: mostly-ASCII UTF-16
    without a mark decodes as UTF-8 byte by byte, into text full of NULs (as do images and
    other binary files, which read as no text in UTF-16 either)."""
    if data.startswith(_UTF16_BOMS):
        return True
    head = data[: _SNIFF - _SNIFF % 2]
    if len(head) < 4:
        return False
    return any(
        head[nul::2].count(0) * 4 > len(head) and _reads_as_text(head.decode(codec, "replace"))
        for nul, codec in ((1, "utf-16-le"), (0, "utf-16-be"))
    )


def _reads_as_text(text: str) -> bool:
    """Whether nearly every character is printable or a line break or tab."""
    readable = sum(char.isprintable() or char in "\t\r\n" for char in text)
    return readable * 10 >= len(text) * 9


class _Lines:
    """The file's lines for the CSV reader, counting them: the reader's own `line_num` is not
    yet advanced when it fails on a line, and record numbers drift from lines once a quoted
    field spans several."""

    def __init__(self, content: str) -> None:
        # Split at "\n" only, as the reader expects; a file with no "\n" at all may end its
        # lines in "\r" alone (Excel for Mac's "Macintosh CSV"), so "\r" splits it too.
        self._lines = iter(io.StringIO(content, newline="\n" if "\n" in content else ""))
        self.number = 0
        self.exhausted = False  # the reader asked past the last line

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        try:
            line = next(self._lines)
        except StopIteration:
            self.exhausted = True
            raise
        self.number += 1
        return line


def bad_line(line: int, message: str, field: str = "content") -> InvalidInput:
    return InvalidInput(f"{field} line {line}: {message}", [{"loc": [field, line], "msg": message}])
