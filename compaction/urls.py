"""Everything the two apps serve, mounted by one include under any prefix:

    path("chat/", include("compaction.urls"))

gives the chat pages (namespace `chat`), the compaction pages (`compaction`),
the REST API under `chat/api/` (namespace `chat_api`) and the OpenAI-compatible
gateway under `chat/v1/` (`chat_v1`). Every address is reversed by its name in
its namespace, so nothing assumes the prefix; a path under `api/` or `v1/`
that matches nothing is answered by the apps themselves in the API's JSON or
the protocol's error object, wherever they are mounted, without touching the
host's other URLs.
"""

from django.urls import URLPattern, URLResolver, include, path, re_path

from chatcore.api import urls as chatcore_api_urls
from chatcore.api.errors import api_not_found
from compaction.api import urls as compaction_api_urls

# Both apps' endpoints under one api/, then the JSON 404 for any other path there.
api_patterns: list[URLPattern | URLResolver] = [
    *chatcore_api_urls.urlpatterns,
    *compaction_api_urls.urlpatterns,
    re_path(r"^", api_not_found, name="not-found"),
]

urlpatterns = [
    path("api/", include((api_patterns, "chat_api"))),
    path("v1/", include("compaction.gateway.urls")),
    path("", include("compaction.page_urls")),
    path("", include("chatcore.urls")),
]
