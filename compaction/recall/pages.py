"""The channel page's search: a plain GET form and a results page, no JavaScript needed."""

from collections.abc import Sequence

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from chatcore import selectors as chat_selectors
from chatcore.models import Channel
from chatcore.web import AuthenticatedRequest, own_channel
from compaction.recall import RecallResult, recall_search


def result_urls(*, channel: Channel, user: User, results: Sequence[RecallResult]) -> list[str]:
    """Where each result opens: the message on the channel page, or in the summarized-history view of the
    summary in force when the result is summarized (the user's cursor read only then). Each page's address is
    reversed once (a search lists up to SEARCH_MAX_LIMIT results, and reversing an address cost more than
    writing the rest of a result)."""
    summary_page = None
    if any(r.summarized for r in results):
        cursor = chat_selectors.cursor_get(channel=channel, user=user)
        if cursor is not None and cursor.summary_id is not None:
            summary_page = reverse("chat:originals", args=[channel.pk, cursor.summary_id])
    channel_page = reverse("chat:channel", args=[channel.pk])
    return [f"{summary_page if r.summarized and summary_page is not None else channel_page}#m{r.id}" for r in results]


@login_required
@require_GET
def channel_search(request: AuthenticatedRequest, channel_id: int) -> HttpResponse:
    channel = own_channel(request, channel_id)
    query = request.GET.get("q", "").strip()
    results, error = [], ""
    if query:
        try:
            found = recall_search(channel=channel, user=request.user, query=query, limit=20)
        except ValidationError as invalid:
            error = "; ".join(invalid.messages)
        else:
            urls = result_urls(channel=channel, user=request.user, results=found.results)
            results = [
                {
                    "result": r,
                    "snippet": mark_safe(r.snippet),  # noqa: S308 (escaped by chatcore.search.highlight)
                    "url": url,
                }
                for r, url in zip(found.results, urls, strict=True)
            ]
    context = {"channel": channel, "query": query, "results": results, "error": error}
    return render(request, "compaction/search.html", context)
