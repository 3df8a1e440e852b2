"""Code a reader can hold in mind: no function in the apps over 60 lines, no
module over 400. Data modules (the demo conversations) and migrations aside;
split a long function into named steps, a long module into a package."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("chatcore", "compaction")
DATA_MODULES = {"chatcore/demo.py"}
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400


def app_modules() -> list[Path]:
    return [
        path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts and str(path.relative_to(ROOT)) not in DATA_MODULES
    ]


def test_no_function_is_longer_than_60_lines():
    long = []
    for path in app_modules():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []


def test_no_module_is_longer_than_400_lines():
    long = [
        f"{path.relative_to(ROOT)} ({count} lines)"
        for path in app_modules()
        if (count := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert long == []


def test_the_checks_see_the_apps():
    modules = {str(path.relative_to(ROOT)) for path in app_modules()}
    assert {"chatcore/services.py", "compaction/services/compact.py"} <= modules
    assert not modules & DATA_MODULES
