"""Settings come from the environment (twelve-factor).

Every knob has a development default except secrets: outside DEBUG,
SECRET_KEY must be set or the process refuses to start.
"""

import os
import re
import sys
from datetime import timedelta
from pathlib import Path
from typing import overload

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_number(name: str, default, kind: type):
    value = os.environ.get(name, "")
    if not value.strip():
        return default
    try:
        return kind(value)
    except ValueError:
        kind_name = "whole number" if kind is int else "number"
        raise ImproperlyConfigured(f"{name} must be a {kind_name}, not {value!r}.") from None


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int)


@overload
def env_float(name: str, default: float) -> float: ...
@overload
def env_float(name: str, default: None) -> float | None: ...
def env_float(name: str, default: float | None) -> float | None:
    return _env_number(name, default, float)


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "dev-only-insecure-key-never-use-in-production"

ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "axes",  # log-in throttling: its AccessAttempt rows, admin and migrations
    "csp",  # the Content-Security-Policy header (its checks)
    "chatcore",
    "compaction",
    # Benchmarks, the soak, the fidelity measure and the loopback model server;
    # chatcore and compaction never import it.
    "devtools",
]

MIDDLEWARE = [
    # First: every response, a redirect or a refusal of the middleware below too, carries the request's id,
    # and every log line of the request says it (chatcore.observability).
    "chatcore.observability.middleware.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Right after SecurityMiddleware: static files skip the rest of the stack (sessions, auth). WhiteNoise's
    # middleware, async-capable (chatcore.middleware): no thread hop around the stack inside it.
    "project.middleware.StaticFilesMiddleware",
    "project.middleware.CSPMiddleware",
    # Around everything that can answer under /api/: an error that is not JSON yet (Django's HTML
    # pages, DEBUG's too, a CSRF failure) becomes the API's JSON body.
    "project.errors.ApiJsonErrorsMiddleware",
    # Query strings and form fields holding a NUL: a 400 naming the field before anything reads them.
    "chatcore.middleware.UnstorableTextMiddleware",
    # project.middleware's: Django's (django-csp's) with their hooks in the event loop, not a thread each.
    "project.middleware.SessionMiddleware",
    "project.middleware.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "project.middleware.AuthenticationMiddleware",
    "project.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes requires: it turns a refused log-in into the lock-out page.
    "axes.middleware.AxesMiddleware",
]

# django-axes' backend first: it refuses a locked-out log-in before the password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "project.urls"
WSGI_APPLICATION = "project.wsgi.application"
ASGI_APPLICATION = "project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

SQLITE_MMAP_BYTES = 256 * 1024 * 1024  # how much of the SQLite file is read through a memory map
# WAL pages written before a commit copies them into the database file (SQLite's default: 1,000 pages).
SQLITE_WAL_AUTOCHECKPOINT_PAGES = 10_000
# The most a connection's own page cache may hold (KiB; SQLite's default: 2,000), filled only as needed.
SQLITE_CACHE_KIB = 32 * 1024
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers and one writer work at once; IMMEDIATE transactions and
    # a busy timeout make web and worker processes queue instead of failing.
    # The file is read through a memory map (address space, not memory: the
    # pages are the operating system's cache, shared by every connection), so
    # that a read served from that cache costs no system call and no copy into
    # the connection's own small page cache, which starts empty with each new
    # connection (most of what a search costs on SQLite is such reads: the
    # messages its words match, looked up one by one).
    # A large write (a bulk import's chunk of 1,000 messages) dirties a page of
    # the chain-hash index per row, whose keys are random: about 900 pages late
    # in a 100,000-message import. At the default checkpoint size every such
    # commit also copied the whole WAL into the database file and synced both,
    # rewriting the same index pages commit after commit; with a larger WAL a
    # checkpoint comes once per several of them and writes each page once. The
    # larger page cache keeps such a transaction's dirty pages in memory until
    # its commit instead of spilling them to the WAL half-way (the memory is
    # taken only by a connection that dirties or reads that many pages).
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": (
            f"PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA mmap_size={SQLITE_MMAP_BYTES}; "
            f"PRAGMA wal_autocheckpoint={SQLITE_WAL_AUTOCHECKPOINT_PAGES}; PRAGMA cache_size=-{SQLITE_CACHE_KIB};"
        ),
    }
    # A file, not memory, so that worker processes started by tests share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
elif env_bool("DB_POOL", False) and sys.argv[1:2] != ["qcluster"]:
    # Not in the task cluster: it forks its workers (and forks a new one for each that times out or is
    # recycled), and a pool's connections and threads do not survive a fork: a forked worker would talk
    # on its parent's sockets. The cluster's processes open connections as Django does by default.
    # psycopg's connection pool (per process): under the ASGI server every request runs its
    # database work in a thread of its own, so connections are borrowed from the pool rather
    # than opened per request (a PostgreSQL backend costs a fork). serve.sh turns it on.
    if DATABASES["default"].get("CONN_MAX_AGE"):
        raise ImproperlyConfigured("DB_POOL and DB_CONN_MAX_AGE exclude each other: set one of them.")
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env_int("DB_POOL_MIN_SIZE", 2),
        "max_size": env_int("DB_POOL_MAX_SIZE", 20),
        "timeout": env_float("DB_POOL_TIMEOUT_SECONDS", 30.0),
    }

if DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3" and env_bool("DB_PREPARED_STATEMENTS", True):
    # psycopg prepares a statement sent this many times on a connection, for the statements that ask for it
    # (chatcore.prepared: a search's cursor and neighbours, a reply's reads and writes); Django's own statements
    # are unchanged.
    # Off (DB_PREPARED_STATEMENTS=0) behind a pooler in transaction mode without prepared statements.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("prepare_threshold", 5)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "static"))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns at start when it is missing
# Production (DEBUG off): `collectstatic` writes compressed copies (gzip) under content-hashed
# names, and WhiteNoise serves them with far-future cache headers. In development the files
# are served from the apps as they are, with no collectstatic step.
STATIC_MANIFEST = env_bool("STATIC_MANIFEST", not DEBUG)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if STATIC_MANIFEST
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
# Uploaded files: an import's export waits here for its background task (COMPACTION_IMPORT_STORAGE).
MEDIA_ROOT = VAR_DIR / "media"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": os.environ["REDIS_URL"]}
        if os.environ.get("REDIS_URL")
        else {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "cache_table"}
    )
}

# This site's own DRF defaults. The apps' API views carry their authentication, permissions, parsers,
# pagination and error bodies themselves (chatcore/api/base.py), so nothing of theirs is set here.
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}


# Endpoints that call a model (reply, compact) are throttled per user with a
# counter in the shared cache: "<requests>/<sec|min|hour|day>", empty = off.
CHATCORE_THROTTLE_EXPENSIVE_RATE = os.environ.get("THROTTLE_EXPENSIVE_RATE", "30/min").strip()
if CHATCORE_THROTTLE_EXPENSIVE_RATE and not re.fullmatch(
    r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", CHATCORE_THROTTLE_EXPENSIVE_RATE
):
    raise ImproperlyConfigured("THROTTLE_EXPENSIVE_RATE must look like 30/min (or be empty to turn it off).")

# Log-in throttling (django-axes), for the pages' log-in form and the admin's alike: after
# LOGIN_FAILURE_LIMIT failures of one username from one address, that pair is refused for
# LOGIN_COOLOFF_MINUTES (the right password too), with a page that says so (429). A success
# clears the count. Failures are rows in the database (every process sees them); staff see
# and delete them in the admin (Access attempts), or: python manage.py axes_reset.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
if AXES_FAILURE_LIMIT < 1:
    raise ImproperlyConfigured("LOGIN_FAILURE_LIMIT must be at least 1.")
AXES_COOLOFF_TIME = timedelta(minutes=env_float("LOGIN_COOLOFF_MINUTES", 15.0))
if AXES_COOLOFF_TIME <= timedelta(0):
    raise ImproperlyConfigured("LOGIN_COOLOFF_MINUTES must be more than 0.")
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "chatcore.account_views.login_locked_out"

# Content-Security-Policy (django-csp) on every response, pages and API: scripts, styles,
# images and requests only from this site; no inline script, style or handler anywhere (the
# pages' code is in static/chatcore/*.js, their bars are SVG), no plugins, no framing.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Conversation compaction API",
    "DESCRIPTION": "Channels, the message tree, replies and compaction of long conversations.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Model calls: the client timeout must stay below the task timeout, which
# stays below the broker's retry, which stays below the compaction lease, so
# that a slow call is never handed to a second worker while the first lives.
CHATCORE_LLM_TIMEOUT_SECONDS = env_float("LLM_TIMEOUT_SECONDS", 60.0)
CHATCORE_LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 1)
# Requests one web process serves at once (chatcore.overload, wrapped around the ASGI application in
# project/asgi.py); the next get a 503 with Retry-After. 0: no limit.
CHATCORE_MAX_REQUESTS_IN_FLIGHT = env_int("MAX_REQUESTS_IN_FLIGHT", 128)
# The apps read the task timeout and the broker's retry from Q_CLUSTER below.
Q_TASK_TIMEOUT_SECONDS = env_int("Q_TASK_TIMEOUT_SECONDS", 300)
Q_RETRY_SECONDS = env_int("Q_RETRY_SECONDS", 360)
COMPACTION_LEASE_SECONDS = env_int("COMPACTION_LEASE_SECONDS", 420)
# Unset: derived from the timeouts (compaction/conf.py).
COMPACTION_DRAIN_SECONDS = env_float("COMPACTION_DRAIN_SECONDS", None)

Q_CLUSTER = {
    "name": os.environ.get("Q_CLUSTER_NAME", "compaction"),
    "workers": env_int("Q_WORKERS", 2),
    "timeout": Q_TASK_TIMEOUT_SECONDS,
    "retry": Q_RETRY_SECONDS,
    "max_attempts": 3,
    "catch_up": False,
    "save_limit": 1000,
    "poll": env_float("Q_POLL_SECONDS", 0.5),
    "label": "Task queue",
}
if os.environ.get("REDIS_URL"):
    Q_CLUSTER["redis"] = os.environ["REDIS_URL"]
else:
    Q_CLUSTER["orm"] = "default"

# Models whose base URL is empty call this endpoint (empty: OpenAI's own). Their key is read from the
# variable each model names (OPENAI_API_KEY unless staff chose another) when the call is made.
CHATCORE_OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "")
# Where catalogue models may send their keys (chatcore/endpoints.py; defaults in chatcore/conf.py):
# hosts reachable over plain http, and the key variables models may name, comma-separated.
if "LLM_HTTP_HOSTS" in os.environ:
    CHATCORE_LLM_HTTP_HOSTS = [h.strip() for h in os.environ["LLM_HTTP_HOSTS"].split(",") if h.strip()]
if os.environ.get("LLM_KEY_VARIABLES", "").strip():
    CHATCORE_LLM_KEY_VARIABLES = [v.strip() for v in os.environ["LLM_KEY_VARIABLES"].split(",") if v.strip()]
# Full-text search of messages: PostgreSQL's text search configuration (english, french, simple...);
# SQLite stems English only. After a change: python manage.py search_reindex.
CHATCORE_SEARCH_LANGUAGE = os.environ.get("SEARCH_LANGUAGE", "english").strip().lower() or "english"

LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO")
# text (the default: one readable line per record) or json (one JSON object per line, for log shippers).
LOG_FORMAT = os.environ.get("LOG_FORMAT", "text").strip().lower() or "text"
if LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured("LOG_FORMAT must be text or json.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_context": {"()": "chatcore.observability.logs.RequestContextFilter"}},
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {"()": "chatcore.observability.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_context"]}
    },
    "loggers": {
        "chatcore": {"handlers": ["console"], "level": LOG_LEVEL},
        "compaction": {"handlers": ["console"], "level": LOG_LEVEL},
        "django": {"handlers": ["console"], "level": "WARNING" if LOG_LEVEL in {"DEBUG", "INFO"} else LOG_LEVEL},
        # The cluster's own lines stay at INFO whatever LOG_LEVEL says: its "starting", "running" and
        # "stopped" lines are what the run script, process supervisors and the benchmarks wait for.
        "django-q": {"handlers": ["console"], "level": "DEBUG" if LOG_LEVEL == "DEBUG" else "INFO", "propagate": False},
    },
}

# The request id a proxy sends in X-Request-ID is kept only from these addresses or networks
# (comma-separated, CIDR allowed); anyone else's is replaced by a new one.
CHATCORE_REQUEST_ID_TRUSTED_PROXIES = [
    a.strip() for a in os.environ.get("REQUEST_ID_TRUSTED_PROXIES", "").split(",") if a.strip()
]
# /metrics: a bearer token (unset: no token opens it) and the addresses that need none (default: this machine).
COMPACTION_METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "").strip()
if "METRICS_ALLOWED_IPS" in os.environ:
    COMPACTION_METRICS_ALLOWED_IPS = [a.strip() for a in os.environ["METRICS_ALLOWED_IPS"].split(",") if a.strip()]
# prometheus_client's multi-process mode: the serve and run scripts point every process (web workers, the
# task cluster) at one folder, emptied at start; /metrics adds their values up.
COMPACTION_METRICS_MULTIPROCESS_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
if COMPACTION_METRICS_MULTIPROCESS_DIR:
    Path(COMPACTION_METRICS_MULTIPROCESS_DIR).mkdir(parents=True, exist_ok=True)

if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # Balancers and Prometheus probe over plain http inside the network: never redirected.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
# Behind a reverse proxy that terminates TLS and says so in X-Forwarded-Proto (nginx, Caddy,
# Traefik, a cloud load balancer). Only trust it when the proxy sets or strips that header;
# TRUST_X_FORWARDED_PROTO=false when clients can reach the server directly.
if not DEBUG and env_bool("TRUST_X_FORWARDED_PROTO", True):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
