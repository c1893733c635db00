"""The layering rules hold (import-linter contracts) and the docs match the vocabulary."""

import re
import tomllib
from pathlib import Path

from importlinter.cli import lint_imports

from benchgen.core.permissions import RULES

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept() -> None:
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def test_every_unguarded_internal_module_is_forbidden_to_edges() -> None:
    """A new `services/**/_*.py` module is covered by the contract only once it is listed there."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [contract] = [c for c in config["contracts"] if "unguarded internals" in c["name"]]
    src = ROOT / "src"
    internal = {
        ".".join(path.relative_to(src).with_suffix("").parts)
        for path in (src / "benchgen" / "services").rglob("_*.py")
        if path.name != "__init__.py"
    }
    assert set(contract["forbidden_modules"]) == internal


def test_permissions_doc_lists_every_action_with_its_scope() -> None:
    text = (ROOT / "docs" / "permissions.md").read_text()
    rows = dict(re.findall(r"^\| `([a-z_.]+)` \| [^|]+ \| (`\w+`|—) \|", text, flags=re.M))
    expected = {
        action.value: f"`{rule.scope.value}`" if rule.scope else "—"
        for action, rule in RULES.items()
    }
    assert rows == expected


def test_no_module_is_missing_its_docstring() -> None:
    missing = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "src").rglob("*.py")
        if path.stat().st_size and not path.read_text().lstrip().startswith(('"""', "#"))
    ]
    assert missing == []
