#!/usr/bin/env bash
# Runs the product for real: DEBUG off, migrations, static files collected
# (compressed, hashed names, served by WhiteNoise), the ASGI server (uvicorn)
# with WEB_CONCURRENCY worker processes, and one django-q2 cluster beside it.
# HOST and PORT choose where it listens (default 127.0.0.1:8000), as in run.sh.
# Every other setting comes from the environment (see docs/deploy.md).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ensure_venv run
PY=.venv/bin/python
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
export DEBUG="${DEBUG:-false}"
WEB_CONCURRENCY="${WEB_CONCURRENCY:-$(nproc 2>/dev/null || echo 2)}"
VAR="${VAR_DIR:-$ROOT/var}"
mkdir -p "$VAR"

# A secret key that survives restarts: the environment's, else one made once
# and kept in VAR_DIR/secret_key (readable by this user only).
if [ -z "${SECRET_KEY:-}" ]; then
    if [ ! -s "$VAR/secret_key" ]; then
        (umask 077 && $PY -c 'import secrets; print(secrets.token_urlsafe(50))' >"$VAR/secret_key")
    fi
    SECRET_KEY="$(cat "$VAR/secret_key")"
    export SECRET_KEY
fi
# PostgreSQL: a connection pool per process (see DB_POOL in docs/deploy.md).
case "${DATABASE_URL:-}" in
    postgres*) export DB_POOL="${DB_POOL:-true}" ;;
esac

$PY manage.py migrate --noinput -v0
[ -n "${REDIS_URL:-}" ] || $PY manage.py createcachetable
$PY manage.py collectstatic --noinput -v0
# The scanner's schedule (idempotent); whether auto-compaction is on stays as the admin set it.
$PY manage.py setup_schedules >/dev/null

# Metrics (prometheus_client's multi-process mode): every process, each web worker and the task cluster's
# workers, writes its values to files in one folder, which /metrics adds up. Emptied at each start, so that
# the values of an earlier run are not counted again.
export PROMETHEUS_MULTIPROC_DIR="${PROMETHEUS_MULTIPROC_DIR:-$VAR/prometheus}"
mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
find "$PROMETHEUS_MULTIPROC_DIR" -maxdepth 1 -name '*.db' -delete

# Both run in the background of this script, so that stopping it (Ctrl-C, or
# a TERM to this script) stops them too: each gets a TERM and time to finish
# (open streams, a running task), then is killed if it hangs.
if [ "${QCLUSTER:-true}" != false ]; then
    $PY manage.py qcluster &
    WORKER=$!
else
    WORKER=""
fi
.venv/bin/uvicorn project.asgi:application \
    --host "$HOST" --port "$PORT" --workers "$WEB_CONCURRENCY" \
    --proxy-headers --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-127.0.0.1}" \
    --timeout-graceful-shutdown "${GRACEFUL_SECONDS:-20}" \
    --timeout-keep-alive "${KEEP_ALIVE_SECONDS:-75}" \
    --log-level "${UVICORN_LOG_LEVEL:-warning}" ${UVICORN_ARGS:-} &
WEB=$!
stop() {
    trap - EXIT INT TERM
    kill -TERM $WEB $WORKER 2>/dev/null || true
    for _ in $(seq 50); do
        kill -0 $WEB $WORKER 2>/dev/null || break
        sleep 0.5
    done
    kill -KILL $WEB $WORKER 2>/dev/null || true
    wait 2>/dev/null || true
}
trap stop EXIT INT TERM

echo "  Serving http://$HOST:$PORT/ with $WEB_CONCURRENCY web worker(s)$([ -n "$WORKER" ] && echo " and a task cluster"). Stop with Ctrl-C."
# Whichever stops first (a crash, a port in use) stops the other.
wait -n $WEB $WORKER || true
