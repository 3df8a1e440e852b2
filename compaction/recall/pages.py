"""The channel page's search: a plain GET form and a results page, no JavaScript needed."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from chatcore import selectors as chat_selectors
from chatcore.web import AuthenticatedRequest, own_channel
from compaction.recall import recall_search


def result_url(*, channel_id: int, message_id: int, summary_id: int | None) -> str:
    """The message on the channel page, or in the summarized-history view when a summary covers it."""
    if summary_id is not None:
        return reverse("chat:originals", args=[channel_id, summary_id]) + f"#m{message_id}"
    return reverse("chat:channel", args=[channel_id]) + f"#m{message_id}"


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
            cursor = chat_selectors.cursor_get(channel=channel, user=request.user)
            summary_id = cursor.summary_id if cursor else None
            results = [
                {
                    "result": r,
                    "snippet": mark_safe(r.snippet),  # noqa: S308 (escaped by chatcore.search.highlight)
                    "url": result_url(
                        channel_id=channel.pk, message_id=r.id, summary_id=summary_id if r.summarized else None
                    ),
                }
                for r in found.results
            ]
    context = {"channel": channel, "query": query, "results": results, "error": error}
    return render(request, "compaction/search.html", context)
