#!/usr/bin/env bash
# Runs the whole product on this machine: virtualenv, install, migrate, demo
# data, then the web server and the django-q2 worker side by side.
# HOST and PORT choose where it listens (default 127.0.0.1:8000).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_venv run
PY=.venv/bin/python
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"

$PY manage.py migrate --noinput -v0
$PY manage.py createcachetable
$PY manage.py seed_demo
# The scanner's django-q2 schedule; the demo switches auto-compaction on (it ships off).
$PY manage.py setup_schedules --enable

VAR="${VAR_DIR:-$ROOT/var}"
# Metrics (prometheus_client's multi-process mode): every process, each web worker and the task cluster's
# workers, writes its values to files in one folder, which /metrics adds up. Emptied at each start, so that
# the values of an earlier run are not counted again.
export PROMETHEUS_MULTIPROC_DIR="${PROMETHEUS_MULTIPROC_DIR:-$VAR/prometheus}"
mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
find "$PROMETHEUS_MULTIPROC_DIR" -maxdepth 1 -name '*.db' -delete

# Both servers run in the background of this script, so that stopping it
# (Ctrl-C, or a TERM to this script alone) stops them too. Each runs in a
# process group of its own (set -m): Ctrl-C reaches this script only, which
# sends one TERM to each, so the worker stops as django-q2 means it to (the
# task in hand finishes, then "Q Cluster … has stopped." is logged) instead
# of every worker process being interrupted at once and restarted by the
# cluster's guard. A worker that hangs is killed after STOP_SECONDS (15).
set -m
$PY manage.py qcluster &
WORKER=$!
$PY manage.py runserver --noreload "$HOST:$PORT" &
WEB=$!
set +m
stop() {
    trap - EXIT INT TERM
    echo "Stopping the web server and the worker..."
    kill -TERM "$WEB" "$WORKER" 2>/dev/null || true
    for _ in $(seq $(( ${STOP_SECONDS:-15} * 10 ))); do
        kill -0 "$WORKER" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$WORKER" 2>/dev/null; then
        echo "The worker did not stop in time: killing it."
        kill -KILL -- -"$WORKER" 2>/dev/null || true
    fi
    kill -KILL -- -"$WEB" 2>/dev/null || true
    wait 2>/dev/null || true
    echo "Stopped."
}
trap stop EXIT INT TERM

echo
echo "  Open http://$HOST:$PORT/  — log in as demo / demo-password (staff: the admin at /admin/)"
echo "  API docs: http://$HOST:$PORT/api/docs/   Stop with Ctrl-C."
echo
# Whichever stops first (a crash, a port in use) stops the other.
wait -n "$WEB" "$WORKER" || true
