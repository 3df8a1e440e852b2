"""The channel list's import form and an import's progress page (htmx refreshes the status while it runs;
without JavaScript the page has a link to reload it)."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from chatcore.errors import NotFound, ServiceError
from chatcore.web import AuthenticatedRequest, error_status, is_htmx, page_error_text, with_retry_after
from compaction import selectors
from compaction.forms import ImportForm
from compaction.imports.jobs import import_create
from compaction.models import ConversationImport

# The channels a progress page lists by name; the rest are counted (all are in the channel list).
CHANNELS_LISTED = 100


@login_required
@require_POST
def conversations_upload(request: AuthenticatedRequest) -> HttpResponse:
    """Check the export and start its import: its progress page, or a page saying why nothing was imported."""
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        error: Exception = ValidationError("Choose an export file and where it comes from.")
    else:
        upload = form.cleaned_data["file"]
        try:
            job = import_create(
                owner=request.user, file=upload, file_name=upload.name, format=form.cleaned_data["format"]
            )
        except (ValidationError, ServiceError) as refused:
            error = refused
        else:
            return redirect("compaction:import-progress", job.pk)
    response = render(
        request,
        "compaction/import_refused.html",
        {"error_text": page_error_text(error), "throttled": error_status(error) == 429},
        status=error_status(error),
    )
    return with_retry_after(response, error)


@login_required
@require_GET
def import_progress(request: AuthenticatedRequest, import_id: int) -> HttpResponse:
    """Where the import stands; while it runs, htmx asks again every few seconds for the status alone."""
    try:
        job = selectors.import_get(user=request.user, import_id=import_id)
    except NotFound:
        raise Http404("Import not found.") from None
    channels = [row.channel for row in selectors.import_channels(conversation_import=job)[:CHANNELS_LISTED]]
    context = {
        "job": job,
        "channels": channels,
        "unlisted": max(0, job.conversations_done - len(channels)),
        "percent": _percent(job),
    }
    template = "compaction/_import_status.html" if is_htmx(request) else "compaction/import_progress.html"
    return render(request, template, context)


def _percent(job: ConversationImport) -> int:
    if job.status == ConversationImport.Status.DONE or not job.messages_total:
        return 100 if job.status == ConversationImport.Status.DONE else 0
    return min(100, job.messages_done * 100 // job.messages_total)
