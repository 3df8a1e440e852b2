# Shared by run.sh and test.sh: a virtualenv in .venv with the project installed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "Please run as root or install sudo to add: $*" >&2; return 1; fi
}

ensure_venv() {
    if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
        as_root apt-get update -q && as_root apt-get install -y -q python3-venv
    fi
    if [ ! -x .venv/bin/python ]; then
        "$PYTHON" -m venv .venv
    fi
    local stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)-$1
    if [ ! -f "$stamp" ]; then
        .venv/bin/pip install -q --upgrade pip
        if [ "$1" = test ]; then .venv/bin/pip install -q -e '.[site,test,bench,docs]'; else .venv/bin/pip install -q -e '.[site]'; fi
        touch "$stamp"
    fi
}
