"""Per-user throttling of the endpoints that call a model (reply, compact).

The counters live in Django's default cache (the database cache, or Redis
when REDIS_URL is set), so every web process and machine shares them. The
rate is read from settings at each request (`THROTTLE_EXPENSIVE_RATE`, e.g.
"30/min"; empty turns the throttle off), so it can be changed per deployment
and per test without re-importing anything.
"""

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

DEFAULT_EXPENSIVE_RATE = "30/min"


class ExpensiveRateThrottle(SimpleRateThrottle):
    """Counts model-calling requests per user (per address when anonymous).

    One bucket for all expensive endpoints: a client cannot multiply its
    allowance by alternating between reply and compact.
    """

    scope = "expensive"

    def get_rate(self) -> str | None:
        return getattr(settings, "THROTTLE_EXPENSIVE_RATE", DEFAULT_EXPENSIVE_RATE) or None

    def get_cache_key(self, request, view) -> str | None:
        if request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"addr:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def wait(self) -> float | None:
        """Seconds until the oldest counted request leaves the window (at least 1)."""
        remaining = super().wait()
        return None if remaining is None else max(1.0, remaining)
