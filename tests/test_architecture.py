"""Dependencies point one way: compaction → chatcore; devtools → both; never back;
no view module imports another app's view module; no app imports at module level a package only the
site installs; no module reads a dependency's private names; and no app's modules import one another in
a circle."""

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APPS = ("chatcore", "compaction", "devtools")


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


# What the `site` extra installs for project/ alone (pyproject.toml): the reusable apps run in a host site
# without them, so an app may import one only inside the function a host opts into (django-axes' lock-out page).
SITE_ONLY = ("whitenoise", "uvicorn", "psycopg", "redis", "dj_database_url", "axes", "csp", "drf_spectacular_sidecar")


def module_level_imports(package: str) -> list[tuple[str, str]]:
    """(file, imported module) for every import at a module's top level (not inside a function)."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.parse(path.read_text(), filename=str(path)).body:
            if isinstance(node, ast.Import):
                found += [(str(path.relative_to(ROOT)), alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append((str(path.relative_to(ROOT)), node.module))
    return found


@pytest.mark.parametrize("package", ["chatcore", "compaction"])
def test_an_app_never_needs_what_only_the_site_installs(package):
    wrong = [
        (path, module)
        for path, module in module_level_imports(package)
        if any(module == name or module.startswith(name + ".") for name in SITE_ONLY)
    ]
    assert wrong == []


def test_the_site_only_check_sees_a_module_level_import(tmp_path, monkeypatch):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "mod.py").write_text("from whitenoise.middleware import WhiteNoiseMiddleware\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert module_level_imports("app") == [("app/mod.py", "whitenoise.middleware")]


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


# Private attributes: a name with one leading underscore belongs to whoever defines it. Our modules read only
# their own (a private name defined anywhere in the apps or project/ is taken to be ours) and these, which
# their libraries document as public API despite the underscore.
DOCUMENTED_UNDERSCORED = {
    "_meta": "Django's Model._meta, the documented Options API",
    "_asdict": "named tuples' documented methods",
    "_replace": "named tuples' documented methods",
    "_fields": "named tuples' documented methods",
    "_make": "named tuples' documented methods",
}
# Known reads of a dependency's private names, each with why no public path exists; a new one fails the test.
PRIVATE_READS_KEPT = {
    ("chatcore/api/schema.py", "_get_response_bodies"): "drf-spectacular has no public hook that sees the responses "
    "extend_schema declares (its get_response_serializers is replaced by extend_schema's); the implied error "
    "responses are added where drf-standardized-errors adds its own, and test_api_schema holds the result",
    ("chatcore/api/schema.py", "_get_response_for_code"): "the same hook renders each error response as "
    "drf-spectacular renders the declared ones",
    ("chatcore/compiled.py", "_iterable_class"): "Django says nowhere else whether a query set makes instances or "
    "values_list() rows; a FixedQuery must make the same, and tests/chatcore/test_compiled.py compares both kinds",
    ("chatcore/db_steps.py", "_restore_context"): "asgiref's own move of a context between the loop and a request's "
    "thread (its Local storage re-homed to the thread, its changes copied back), which sync_to_async applies and "
    "db_step must apply the same; asgiref has no public form of it, and test_db_steps compares both",
    ("chatcore/llm_chat.py", "construct_type"): "the SDK's own building of a response body into its types (no "
    "validation), so that a call awaited whole over our transport reads the same object as through the SDK; "
    "test_llm_http compares both",
    ("chatcore/llm_chat.py", "_strict_response_validation"): "whether the SDK's client validates answers strictly, "
    "which our transport's parse does not do: such a client keeps the SDK's own request",
    ("chatcore/llm_http.py", "_base_client"): "the transport builds its TLS context, requests and responses with the "
    "HTTP library the SDK itself imports (httpx, or httpx2 in newer SDKs), so certificates and errors match it",
    ("chatcore/llm_http.py", "FinalRequestOptions"): "the SDK's retry delay takes its request options; the streamed "
    "call's retries must wait as the SDK's would",
    ("chatcore/llm_http.py", "_should_retry"): "the SDK's own decision to retry a status (x-should-retry, 408, 409, "
    "429, 5xx), so that a streamed call retries exactly as through the SDK; test_llm_http compares both",
    ("chatcore/llm_http.py", "_calculate_retry_timeout"): "the SDK's backoff and Retry-After reading, for the same "
    "reason",
    ("chatcore/llm_http.py", "_make_status_error_from_response"): "the SDK's mapping of a status to its error class "
    "(RateLimitError, NotFoundError, ...) with its message and body, which callers and tests match on",
    ("chatcore/tokens.py", "_backend"): "bpe-openai's tokenizer core, for its count of a text's tokens "
    "(encode_ordinary builds and copies the list of ids only for the caller to measure it); read with getattr, "
    "and without it encode_ordinary gives the same counts (test_tokens compares them)",
    ("compaction/safety/first_pass.py", "_Anchor"): "the RE2 binding's unanchored mode, for calling its compiled "
    "expression directly on bytes (its public search builds a generator and a match object per call); read with "
    "getattr, and without it the public calls give the same spans",
    ("compaction/safety/first_pass.py", "_regexp"): "the RE2 binding's compiled expression itself, for the same "
    "reason and with the same fallback",
}
FIRST_PARTY = {"chatcore", "compaction", "devtools", "project", "tests"}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined_names(trees: list[ast.Module]) -> tuple[set[str], dict[str, set[str]]]:
    """Private names our code defines, and for each the classes that define it as a method or class attribute."""
    names: set[str] = set()
    by_class: dict[str, set[str]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".")[-1])
            elif isinstance(node, ast.Call) and (name := _name_argument(node, ("setattr",))):
                names.add(name)
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    for name in _class_level_names(item):
                        by_class.setdefault(name, set()).add(node.name)
    return names, by_class


def _class_level_names(item: ast.stmt) -> list[str]:
    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [item.name]
    targets = item.targets if isinstance(item, ast.Assign) else [item.target] if isinstance(item, ast.AnnAssign) else []
    return [target.id for target in targets if isinstance(target, ast.Name)]


def _name_argument(call: ast.Call, functions: tuple[str, ...]) -> str | None:
    """The name of getattr/hasattr/setattr(obj, "name", ...) when `call` is one of `functions` with a constant."""
    if not (isinstance(call.func, ast.Name) and call.func.id in functions and len(call.args) >= 2):
        return None
    name = call.args[1]
    return name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None


def _third_party(module: str) -> bool:
    top = module.split(".")[0]
    return top not in FIRST_PARTY and top not in sys.stdlib_module_names


def private_reads(tree: ast.Module, ours: set[str], by_class: dict[str, set[str]]) -> list[tuple[int, str]]:
    """(line, name) of each read of a private name that our code does not define: an attribute, a getattr or
    hasattr by name, an import from a dependency's private module or of its private name, and a call up to a
    dependency's private method (super()._name, defined by no class of ours but the caller's own)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.Attribute)
                    and _is_private(inner.attr)
                    and isinstance(inner.value, ast.Call)
                    and isinstance(inner.value.func, ast.Name)
                    and inner.value.func.id == "super"
                    and not by_class.get(inner.attr, set()) - {node.name}
                ):
                    found.append((inner.lineno, inner.attr))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and _is_private(node.attr):
            if node.attr not in ours:
                found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Call) and (name := _name_argument(node, ("getattr", "hasattr"))):
            if _is_private(name) and name not in ours:
                found.append((node.lineno, name))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and _third_party(node.module):
            private_module = any(_is_private(part) for part in node.module.split("."))
            found += [(node.lineno, alias.name) for alias in node.names if private_module or _is_private(alias.name)]
        elif isinstance(node, ast.Import):
            found += [
                (node.lineno, alias.name)
                for alias in node.names
                if _third_party(alias.name) and any(_is_private(part) for part in alias.name.split("."))
            ]
    return [(line, name) for line, name in found if name not in DOCUMENTED_UNDERSCORED]


def _app_trees() -> dict[str, ast.Module]:
    return {
        str(path.relative_to(ROOT)): ast.parse(path.read_text(), filename=str(path))
        for package in ("chatcore", "compaction", "project")
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def test_no_module_reads_a_private_attribute_of_a_dependency():
    trees = _app_trees()
    ours, by_class = _defined_names(list(trees.values()))
    reads = [
        (path, line, name)
        for path, tree in trees.items()
        if path.split("/")[0] in ("chatcore", "compaction")
        for line, name in private_reads(tree, ours, by_class)
    ]
    assert [read for read in reads if (read[0], read[2]) not in PRIVATE_READS_KEPT] == []
    # Each exception is still needed: one that no longer applies is taken off the list.
    assert {(path, name) for path, _, name in reads} >= set(PRIVATE_READS_KEPT)


def test_the_private_read_check_finds_each_kind_of_read():
    source = """
import re2
import stdnum._private
from django.utils._os import safe_join
from rest_framework.fields import _UnvalidatedField
from collections import OrderedDict

class Schema(Base):
    _own = 1

    def _hook(self):
        self._cache = {}
        return super()._hook(), self._cache, self._own, self._library_helper()

def use(expression, record, model):
    record._replace(a=1)
    getattr(model, "_state")
    return re2._Anchor, expression._regexp, model._meta
"""
    tree = ast.parse(source)
    ours, by_class = _defined_names([tree])
    assert sorted(name for _, name in private_reads(tree, ours, by_class)) == [
        "_Anchor",
        "_UnvalidatedField",
        "_hook",
        "_library_helper",
        "_regexp",
        "_state",
        "safe_join",
        "stdnum._private",
    ]


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class _ModuleImports:
    """The modules of one app that one of its modules causes to run, from every import statement in it:
    at the top, inside functions, under `if TYPE_CHECKING` (a circle there is a circle in the design,
    kept from failing at run time only by deferring it)."""

    def __init__(self, name: str, path: Path, modules: set[str]):
        self.name, self.modules = name, modules
        self.package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        # The packages around a module have started running before it does: importing them adds nothing.
        self.enclosing = {".".join(name.split(".")[:depth]) for depth in range(1, name.count(".") + 1)}
        self.found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self._runs(alias.name)
            elif isinstance(node, ast.ImportFrom):
                self._from(node)

    def _runs(self, module: str) -> None:
        """Importing `module` runs each package on its way, then the module itself."""
        parts = module.split(".")
        for length in range(1, len(parts) + 1):
            prefix = ".".join(parts[:length])
            if prefix in self.modules and prefix not in self.enclosing and prefix != self.name:
                self.found.add(prefix)

    def _from(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            module = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        self._runs(module)
        for alias in node.names:
            if f"{module}.{alias.name}" in self.modules:
                self._runs(f"{module}.{alias.name}")
            elif module in self.enclosing:  # a name that an enclosing package's __init__ defines
                self.found.add(module)


def import_graph(app: str, root: Path = ROOT) -> dict[str, set[str]]:
    """Module → the modules of the same app that importing it runs (migrations aside)."""
    paths = {_module_name(path, root): path for path in (root / app).rglob("*.py") if "migrations" not in path.parts}
    return {name: _ModuleImports(name, path, set(paths)).found for name, path in paths.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles: strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    cycles = []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = lowest[root] = len(index)
        stack.append(root)
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is None:
                work.pop()
                if work:
                    lowest[work[-1][0]] = min(lowest[work[-1][0]], lowest[node])
                if lowest[node] == index[node]:
                    component = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(component) > 1:
                        cycles.append(sorted(component))
            elif target not in index:
                index[target] = lowest[target] = len(index)
                stack.append(target)
                work.append((target, iter(sorted(graph[target]))))
            elif target in stack:
                lowest[node] = min(lowest[node], index[target])
    return sorted(cycles)


@pytest.mark.parametrize("app", APPS)
def test_no_import_cycle_inside_an_app(app):
    assert import_cycles(import_graph(app)) == []


def test_the_cycle_check_sees_imports_in_functions_and_for_type_checkers(tmp_path):
    source = {
        "__init__.py": "from app.tree import Tree\nfrom app.bark import bark\n",
        "tree.py": "class Tree:\n    def grow(self):\n        from app import leaves\n",
        "leaves.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .models import Model\n",
        "models.py": "import app.tree\n",
        "bark.py": "from app import Tree\n\ndef bark(): ...\n",
        "alone.py": "from app import tree\nfrom . import leaves\n",
    }
    (tmp_path / "app").mkdir()
    for name, text in source.items():
        (tmp_path / "app" / name).write_text(text)
    graph = import_graph("app", root=tmp_path)
    assert graph == {
        "app": {"app.tree", "app.bark"},
        "app.tree": {"app.leaves"},
        "app.leaves": {"app.models"},
        "app.models": {"app.tree"},
        "app.bark": {"app"},  # Tree is the package's own name, not a module: its __init__ must have run
        "app.alone": {"app.tree", "app.leaves"},
    }
    assert import_cycles(graph) == [["app", "app.bark"], ["app.leaves", "app.models", "app.tree"]]
