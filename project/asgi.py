"""The ASGI application (uvicorn in production: project/scripts/serve.sh)."""

import gc
import os
import warnings
from importlib import import_module

import django
from django.conf import settings

# The collector's young generation in a web worker, in net new container objects between young collections
# (Python's default is 700): see the end of this module.
YOUNG_COLLECTION_THRESHOLD = 50_000

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application does

# Django's handler with its middleware's hooks in the event loop and its request threads kept (project.handler).
from project.handler import ASGIHandler  # noqa: E402 (after Django is set up)

django_application = ASGIHandler()

from chatcore.overload import InFlightLimit  # noqa: E402 (after Django is set up)
from project.errors import overload_refusal  # noqa: E402

# Outermost: a full process refuses a request (503, Retry-After) before Django reads any of it; except the
# liveness probe and the metrics, which a full process must still answer (its readiness says 503).
application = InFlightLimit(django_application, refusal=overload_refusal, uncounted=("/healthz", "/metrics"))

# The web tier calls models: load the client library now, in each worker as it starts, rather than
# inside the event loop at the first reply (it takes a second or more to import, during which a
# worker would serve nothing).
import openai  # noqa: E402, F401

# Likewise the tokenizer (chatcore.tokens): its tables take a second of CPU to load, which the first
# message counted in a worker would otherwise pay inside the event loop.
from chatcore.tokens import tokenizer_name  # noqa: E402

tokenizer_name()

# Likewise the URLconf (every app's views, the API's schema views): the first request resolved would import it.
import_module(settings.ROOT_URLCONF)

# WhiteNoise answers static files with a file iterator, which Django's ASGI handler reads in a thread
# and warns about on every file. That is fine for files served once per browser (hashed names,
# cached for a year); the warning would only bury real ones in the server's log.
warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous iterators")

# What is loaded by now (Django, the apps, the model client) lives as long as the worker: kept out of the
# collector's full passes, which otherwise walk all of it again whenever a large request triggers one.
gc.freeze()

# Each request's objects (Django's request, DRF's request and view, the response, their tasks) hold one
# another in reference cycles, so they are freed only by the collector, and a streamed reply keeps them alive
# for the model's whole answer. At Python's default threshold a young collection runs every few hundred
# allocations: each one walks the objects of every request in flight, which survive it and are promoted, so
# the older generations' passes walk them again and the full passes find most of them there, dead. With a
# young generation this large most requests have ended, their cycles unreachable, by the first collection
# that sees their objects, which frees them in that one pass; the older generations' thresholds stay
# Python's. The price is memory: at most this many objects wait between two young collections.
gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])
