"""Code shape, for the reviewer: the functions and modules of the apps long enough to deserve a second look are
listed with their sizes as warnings (pytest's warnings summary), never as failures.

A long function or module is a prompt to look for the responsibilities it mixes, not a limit to split it under:
split along what the code does (named steps, a package of parts), or leave it whole when it does one thing. What
fails here is only what would make the list wrong: sizes measured as a reader counts them, and every module of
the apps measured (the demo conversations and migrations are data and stay out)."""

import ast
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("chatcore", "compaction")
DATA_MODULES = {"chatcore/demo.py"}
REVIEW_FUNCTION_LINES = 60  # about a screen: longer, and a reader scrolls to see what it does
REVIEW_MODULE_LINES = 400  # longer, and a reader looks for the parts it could be a package of


class CodeShape(UserWarning):
    """A function or module long enough that a reviewer should ask what it does besides its name."""


def app_modules() -> list[Path]:
    return [
        path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts and str(path.relative_to(ROOT)) not in DATA_MODULES
    ]


def function_sizes(source: str) -> list[tuple[str, int, int]]:
    """(qualified name, first line, lines) of every function, its decorators included: what a reader scrolls."""
    sizes = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, prefix)
                continue
            if not isinstance(child, ast.ClassDef) and child.end_lineno is not None:
                first = min([child.lineno, *(decorator.lineno for decorator in child.decorator_list)])
                sizes.append((prefix + child.name, first, child.end_lineno - first + 1))
            visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(source), "")
    return sizes


def for_review() -> list[tuple[str, int]]:
    """(where, lines) of each function and module over its review line, the longest first."""
    listed = []
    for path in app_modules():
        source, where = path.read_text(), str(path.relative_to(ROOT))
        if (lines := len(source.splitlines())) > REVIEW_MODULE_LINES:
            listed.append((where, lines))
        listed += [
            (f"{where}:{first} {name}", size)
            for name, first, size in function_sizes(source)
            if size > REVIEW_FUNCTION_LINES
        ]
    return sorted(listed, key=lambda item: (-item[1], item[0]))


def test_long_functions_and_modules_are_listed_for_review():
    listed = for_review()
    for where, lines in listed:
        warnings.warn(f"{where}: {lines} lines", CodeShape, stacklevel=1)
    limits = [REVIEW_FUNCTION_LINES if ":" in where else REVIEW_MODULE_LINES for where, _ in listed]
    assert all(lines > limit for (_, lines), limit in zip(listed, limits, strict=True))


def test_sizes_are_counted_as_a_reader_sees_them():
    source = """
import functools


@functools.cache
def decorated():
    return 1


class Holder:
    async def method(self):
        def inner():
            pass

        return inner
"""
    assert function_sizes(source) == [("decorated", 5, 3), ("Holder.method", 11, 5), ("Holder.method.inner", 12, 2)]


def test_every_module_of_the_apps_is_measured():
    modules = {str(path.relative_to(ROOT)) for path in app_modules()}
    assert {
        "chatcore/services.py",
        "compaction/services/compact.py",
        "compaction/summarizers/offline/core.py",
    } <= modules
    assert not modules & DATA_MODULES
    assert not any("/migrations/" in module for module in modules)
