"""The person's own account pages: personal API tokens, and the page of a log-in paused after
too many failures (django-axes).

The same services as /api/tokens/. After a create the page redirects (so a
reload cannot make a second token) and the key rides in the session for
that one GET, which removes it; the page is sent with no-store so that no
cache keeps it.
"""

import math
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST

from chatcore import api_tokens, selectors
from chatcore.errors import NotFound
from chatcore.forms import ApiTokenForm
from chatcore.web import AuthenticatedRequest, form_submit

NEW_TOKEN_SESSION_KEY = "new_api_token"


@login_required
@require_http_methods(["GET", "POST"])
def token_list(request: AuthenticatedRequest) -> HttpResponse:
    form = ApiTokenForm(request.POST or None)
    new_token, status = form_submit(
        request, form, lambda values: api_tokens.api_token_create(user=request.user, **values)
    )
    if new_token is not None:
        token, key = new_token
        request.session[NEW_TOKEN_SESSION_KEY] = {"name": token.name, "key": key}
        return redirect("chat:tokens")
    created = request.session.pop(NEW_TOKEN_SESSION_KEY, None) if request.method == "GET" else None
    context = {"form": form, "tokens": selectors.api_token_list(user=request.user), "created": created}
    response = render(request, "chatcore/tokens.html", context, status=status)
    add_never_cache_headers(response)
    return response


@login_required
@require_POST
def token_revoke(request: AuthenticatedRequest, token_id: int) -> HttpResponse:
    try:
        token = selectors.api_token_get(user=request.user, token_id=token_id)
    except NotFound:
        raise Http404("Token not found.") from None
    name, prefix = token.name, token.prefix
    api_tokens.api_token_revoke(token=token, actor=request.user)
    messages.success(request, f"Token “{name}” ({prefix}…) revoked: it no longer works.")
    return redirect("chat:tokens")


def login_locked_out(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict | None
) -> HttpResponse:
    """django-axes' answer once a username and address have failed too often (settings AXES_*): a page
    that says why and for how long, 429 with Retry-After, for the pages' log-in form and the admin's.
    Imported here: log-in throttling is the host's choice, and a host without django-axes never calls it."""
    from axes.helpers import get_client_username, get_cool_off, get_failure_limit

    cool_off = get_cool_off(request) or timedelta(0)
    context = {
        "failure_limit": get_failure_limit(request, credentials),
        "username": get_client_username(request, credentials) or "",
        "minutes": max(1, math.ceil(cool_off.total_seconds() / 60)),
    }
    response = render(request, "chatcore/locked_out.html", context, status=429)
    if cool_off:
        response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response
