#!/usr/bin/env bash
# Runs the whole test suite. Installs what a fresh Debian machine lacks:
# python3-venv, Debian's Chromium for the browser tests, and the Python
# packages. DATABASE_URL selects the database (default: SQLite).
# Without arguments, ruff (lint and format), mypy and the docs build
# (mkdocs build --strict) run first and stop the run if they fail; extra
# arguments go to pytest alone (e.g. -k branch, -x).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
if ! command -v chromium >/dev/null; then
    as_root apt-get update -q && as_root apt-get install -y -q chromium
fi
ensure_venv test
if [ $# -eq 0 ]; then
    # The whole run starts with the code checks (CI's too); with pytest arguments they are skipped.
    echo "== ruff check, ruff format --check, mypy, mkdocs build --strict =="
    .venv/bin/ruff check .
    .venv/bin/ruff format --check .
    .venv/bin/mypy
    NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir var/site
fi
exec .venv/bin/python -m pytest "$@"
