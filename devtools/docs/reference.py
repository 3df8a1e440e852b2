"""The Configuration reference's tables, read from the code: the apps' settings from their conf
modules (names, defaults and the docstring entry of each), the environment from what
project/settings.py and the scripts actually read. A setting without a docstring entry, or a variable
read but described nowhere on the page, is reported as a problem, which fails the strict build."""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from pathlib import Path

from chatcore.appsettings import AppSettings

ROOT = Path(__file__).resolve().parents[2]
# The apps' conf modules: every prefixed setting the apps read is declared in one of them.
CONF_MODULES = ("chatcore.conf", "compaction.conf", "compaction.gateway.conf")
SETTINGS_FILE = ROOT / "project" / "settings.py"
SCRIPTS = (ROOT / "project" / "scripts" / "serve.sh", ROOT / "project" / "scripts" / "run.sh")
# The helpers of project/settings.py that read one variable: name first, default second.
ENV_READERS = {"env_bool", "env_int", "env_float"}
SHELL_DEFAULT = re.compile(r"\$\{([A-Z][A-Z0-9_]*):-([^}]*)\}")


@dataclass(frozen=True)
class Variable:
    name: str
    default: str
    read_by: str


def _cell(text: str) -> str:
    """Text made safe for one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    """Text as a code span in a table cell (a pipe inside backquotes does not end the cell)."""
    return "`" + " ".join(text.split()) + "`"


def _docstring_entry(doc: str, prefix: str, name: str) -> str:
    """The paragraph of a conf docstring that documents NAME (or PREFIX + NAME), without its heading
    (the names, the setting and the default before the first colon that ends them)."""
    lines = doc.splitlines()
    word = re.compile(rf"(?<![A-Z0-9_])(?:{re.escape(prefix)})?{re.escape(name)}(?![A-Z0-9_])")
    for index, line in enumerate(lines):
        if line[:1].isupper() and word.search(line.split(":")[0] if ":" in line else line):
            paragraph = [line]
            for following in lines[index + 1 :]:
                if not following.strip() or not following.startswith(" "):
                    break
                paragraph.append(following)
            text = " ".join(part.strip() for part in paragraph)
            head_end = re.search(r"\)?: ", text)
            return text[head_end.end() :] if head_end else ""
    return ""


def _app_settings(module: object) -> list[AppSettings]:
    return [value for value in vars(module).values() if isinstance(value, AppSettings)]


def app_settings_markdown() -> tuple[str, list[str]]:
    """One table per app: every prefixed setting, its default and what it is for."""
    parts: list[str] = []
    problems: list[str] = []
    for module_name in CONF_MODULES:
        module = importlib.import_module(module_name)
        path = module_name.replace(".", "/") + ".py"
        doc = module.__doc__ or ""
        for knobs in _app_settings(module):
            parts += [f"### `{knobs.prefix}…` (in `{path}`)", ""]
            names = [(name, repr(default)) for name, default in knobs.defaults.items()]
            names += [(name, "derived: see the description") for name in knobs.derived]
            for name, default in sorted(names):
                text = _docstring_entry(doc, knobs.prefix, name)
                if not text:
                    problems.append(f"{path}: {knobs.prefix}{name} has no entry in the module's docstring")
                # One heading per setting: a link to it from anywhere, and names that never wrap in a cell.
                parts += [
                    f"#### `{knobs.prefix}{name}`",
                    "",
                    f"Default: {_code(default)}",
                    "",
                    text[:1].upper() + text[1:],
                    "",
                ]
    return "\n".join(parts), problems


def _literal(node: ast.expr | None) -> str:
    return "(none)" if node is None else ast.unparse(node)


def settings_variables() -> list[Variable]:
    """Every environment variable project/settings.py reads, with its default as written there."""
    tree = ast.parse(SETTINGS_FILE.read_text())
    found: dict[str, Variable] = {}
    for statement in tree.body:
        target = ""
        if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
            target = statement.targets[0].id
        for node in ast.walk(statement):
            name, default = None, None
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                function = node.func
                if isinstance(function, ast.Name) and function.id in ENV_READERS:
                    name, default = node.args[0].value, node.args[1] if len(node.args) > 1 else None
                elif (
                    isinstance(function, ast.Attribute)
                    and function.attr == "get"
                    and ast.unparse(function.value) in ("os.environ", "environ")
                ):
                    name, default = node.args[0].value, node.args[1] if len(node.args) > 1 else None
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
                if isinstance(node.slice, ast.Constant):
                    name = node.slice.value
            if isinstance(name, str) and name not in found:
                read_by = f"`{target}`" if target else "project/settings.py"
                found[name] = Variable(name, _literal(default), read_by)
    return list(found.values())


def script_variables() -> list[Variable]:
    found: dict[str, Variable] = {}
    for script in SCRIPTS:
        for name, default in SHELL_DEFAULT.findall(script.read_text()):
            found.setdefault(name, Variable(name, default or "(empty)", f"`{script.relative_to(ROOT)}`"))
    return list(found.values())


def _described(page: str) -> set[str]:
    """The variables the page's own tables describe (a backquoted name in a row's first cell)."""
    described: set[str] = set()
    for line in page.splitlines():
        if line.startswith("| "):
            described.update(re.findall(r"`([A-Z][A-Z0-9_]*)`", line.split("|")[1]))
    return described


def environment_markdown(page: str) -> tuple[str, list[str]]:
    """Every variable read, where and with which default; a problem for each one the page's
    hand-written tables leave out."""
    described = _described(page)
    rows = ["| variable | default as written in the code | read by |", "|---|---|---|"]
    problems = []
    seen: set[str] = set()
    for variable in settings_variables() + script_variables():
        if variable.name in seen:
            continue
        seen.add(variable.name)
        rows.append(f"| `{variable.name}` | {_code(variable.default)} | {variable.read_by} |")
        if variable.name not in described:
            problems.append(f"configuration.md: the environment variable {variable.name} is read but not described")
    return "\n".join(rows) + "\n", problems
