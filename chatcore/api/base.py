"""The one base of every view of the apps' REST API.

A host site's `REST_FRAMEWORK` setting is its own: its API may want other
authentication, permissions, pagination or error bodies. So the apps' views
carry theirs on the class, and nothing here reads or changes the host's
defaults: personal tokens (either header scheme) and the session, signed-in
people only, the parsers that refuse unstorable text, limit/offset pages,
the error body of `chatcore.api.exceptions`, and the schema conventions of
`chatcore.api.schema`.
"""

from collections.abc import Callable
from typing import Any

from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.generics import GenericAPIView
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.throttling import BaseThrottle

from chatcore.api.authentication import TokenAuthentication
from chatcore.api.exceptions import exception_handler
from chatcore.api.pagination import Pagination
from chatcore.api.parsers import FormParser, JSONParser, MultiPartParser
from chatcore.api.schema import AutoSchema

RENDERERS: list[type[BaseRenderer]] = [JSONRenderer, BrowsableAPIRenderer]


class ApiView(GenericAPIView):
    # Token first: its WWW-Authenticate header makes a missing or bad credential a 401, not a 403.
    authentication_classes: list[type[BaseAuthentication]] = [TokenAuthentication, SessionAuthentication]
    permission_classes: list[type[BasePermission]] = [IsAuthenticated]
    parser_classes: list[type[BaseParser]] = [JSONParser, FormParser, MultiPartParser]
    renderer_classes: list[type[BaseRenderer]] = RENDERERS
    pagination_class: type[Pagination] | None = Pagination
    # Operations that call a model are limited by the services themselves (chatcore/throttling.py).
    throttle_classes: list[type[BaseThrottle]] = []
    content_negotiation_class = DefaultContentNegotiation
    versioning_class = None
    schema = AutoSchema()

    def get_exception_handler(self) -> Callable[[Exception, dict[str, Any]], Any]:
        return exception_handler
