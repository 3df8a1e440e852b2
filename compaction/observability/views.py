"""`/healthz`, `/readyz` and `/metrics`: plain Django views, outside the REST API (no throttle, no
authentication classes, no session), each logged at DEBUG only (`chatcore.observability.middleware.quiet`).
"""

import hmac
import logging

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    gc_collector,
    generate_latest,
    multiprocess,
    platform_collector,
    process_collector,
)

from chatcore.observability.middleware import address_listed, quiet
from compaction import conf
from compaction.observability.health import readiness
from compaction.observability.metrics import gauges_refresh

logger = logging.getLogger(__name__)


@quiet
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is alive and serving: no database, no cache, nothing that can be down but itself."""
    return JsonResponse({"status": "ok"})


@quiet
@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Ready for traffic: 200 with every check's word, or 503 naming the checks that fail."""
    ready, checks, failing = readiness()
    if ready:
        return JsonResponse({"status": "ready", "checks": checks})
    return JsonResponse({"status": "unavailable", "failing": failing, "checks": checks}, status=503)


def metrics_allowed(request: HttpRequest) -> bool:
    """The configured bearer token (compared in constant time), or an address on the allowed list."""
    token = conf.METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if token and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode()):
        return True
    return address_listed(request.META.get("REMOTE_ADDR", ""), conf.METRICS_ALLOWED_IPS)


def _registry() -> CollectorRegistry:
    """Every process's values when they write them to a shared folder (the web workers and the cluster's
    workers), with this process's own process and Python collectors; else this process's registry."""
    folder = conf.METRICS_MULTIPROCESS_DIR
    if not folder:
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=folder)
    process_collector.ProcessCollector(registry=registry)
    platform_collector.PlatformCollector(registry=registry)
    gc_collector.GCCollector(registry=registry)
    return registry


@quiet
@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus exposition of every metric (text format)."""
    if not metrics_allowed(request):
        response = HttpResponse("Metrics need the bearer token or an allowed address.\n", status=403,
                                content_type="text/plain")  # fmt: skip
        if conf.METRICS_TOKEN:
            response.status_code = 401
            response["WWW-Authenticate"] = "Bearer"
        return response
    try:
        gauges_refresh()
    except DatabaseError as error:  # the other metrics still matter when the database is down
        logger.warning("metrics: the database gauges were not refreshed (%s)", error)
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
