#!/usr/bin/env bash
# Runs the whole test suite. Installs what a fresh Debian machine lacks:
# python3-venv, Debian's Chromium for the browser tests, and the Python
# packages. DATABASE_URL selects the database (default: SQLite).
# Extra arguments go to pytest (e.g. -k branch, -x).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
if ! command -v chromium >/dev/null; then
    as_root apt-get update -q && as_root apt-get install -y -q chromium
fi
ensure_venv test
exec .venv/bin/python -m pytest "$@"
