"""Provider token kinds of the corpus: (kind, display name, env name, value maker, needs a keyword), read from
providers.txt, where each kind's value is a template (its format is described at the top of that file)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from tests.redaction_corpus.values import DIGITS, LOWER, UPPER, Values

Maker = Callable[[Values], str]

TABLE = Path(__file__).with_name("providers.txt")
ALPHABETS = {"LOWER": LOWER, "UPPER": UPPER, "DIGITS": DIGITS}
_PART = re.compile(r"\{([^}]*)\}")


def _value(v: Values, spec: str) -> str:
    """One {…} part of a template: "b62 40", "chars UPPER+DIGITS 20", "hex 8 upper", "randint 1 21"."""
    method, *args = spec.split()
    upper = args[-1:] == ["upper"]
    args = args[:-1] if upper else args
    if method == "randint":
        value = str(v.rng.randint(int(args[0]), int(args[1])))
    elif method == "chars":
        value = v.chars("".join(ALPHABETS.get(part, part) for part in args[0].split("+")), int(args[1]))
    else:
        value = getattr(v, method)(*map(int, args))
    return value.upper() if upper else value


def _maker(template: str) -> Maker:
    pieces = _PART.split(template)  # literal text, a part, literal text, … (parts at odd positions)

    def make(v: Values) -> str:
        return "".join(_value(v, piece) if i % 2 else piece for i, piece in enumerate(pieces))

    return make


def providers_read(path: Path) -> list[tuple[str, str, str, Maker, bool]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            kind, name, env, keyword, template = (field.strip() for field in line.split("|", 4))
            rows.append((kind, name, env, _maker(template), keyword == "keyword"))
    return rows


PROVIDERS = providers_read(TABLE)
