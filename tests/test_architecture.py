"""Dependencies point one way: compaction → chatcore; devtools → both; never back;
and no view module imports another app's view module."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(package: str) -> list[tuple[str, str]]:
    """(file, imported module) for every import in the package's source."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found += [(str(path.relative_to(ROOT)), alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append((str(path.relative_to(ROOT)), node.module))
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("chatcore", ("compaction", "devtools")), ("compaction", ("devtools",))],
)
def test_an_app_never_imports_what_builds_on_it(package, forbidden):
    wrong = [
        (path, module)
        for path, module in imported_modules(package)
        if any(module == name or module.startswith(name + ".") for name in forbidden)
    ]
    assert wrong == []


def test_no_view_module_imports_another_apps_views():
    wrong = [
        (path, module)
        for package in ("chatcore", "compaction")
        for path, module in imported_modules(package)
        if module.split(".")[-1] == "views"
        and module.split(".")[0] in ("chatcore", "compaction")
        and module.split(".")[0] != path.split("/")[0]
    ]
    assert wrong == []
