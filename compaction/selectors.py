"""Reads of the compaction app, shared by services, views, admin and commands."""

from django.contrib.auth.models import User
from django.db.models import F, Q, QuerySet

from chatcore.errors import NotFound
from chatcore.models import Channel, Persona, Summary, Team
from compaction.models import CompactionProfile, ConversationImport, ImportedChannel


def profile_list() -> QuerySet[CompactionProfile]:
    return CompactionProfile.objects.select_related("model", "persona")


def profiles_visible(
    *, user: User | None = None, channel: Channel | None = None, persona: Persona | None = None
) -> QuerySet[CompactionProfile]:
    """Profiles a user may pick: global ones, plus those of the persona and the team in question.

    Personas are a shared catalogue (anyone may start a channel with any of
    them), so without a channel or persona every persona's profile is listed,
    with the teams' of the teams the user is in; for a channel, only the
    global ones, those of its persona and those of its team apply.
    """
    profiles = profile_list()
    if channel is not None:
        persona = channel.persona
    if channel is not None or persona is not None:
        scope = Q(persona__isnull=True, team__isnull=True)
        if persona is not None:
            scope |= Q(persona=persona)
        if channel is not None and channel.team_id is not None:
            scope |= Q(team_id=channel.team_id)
        profiles = profiles.filter(scope)
    elif user is not None:
        profiles = profiles.filter(Q(team__isnull=True) | Q(team__in=Team.objects.filter(memberships__user=user)))
    # Global profiles first on every database (PostgreSQL sorts NULL last by default).
    return profiles.order_by(F("persona_id").asc(nulls_first=True), "-is_default", "name")


def profile_get(*, profile_id: int) -> CompactionProfile:
    try:
        return profile_list().get(pk=profile_id)
    except (CompactionProfile.DoesNotExist, ValueError, TypeError):
        raise NotFound("Profile not found.") from None


def summaries_for_user(*, user: User) -> QuerySet[Summary]:
    return Summary.objects.filter(channel__owner=user, channel__deleted_at__isnull=True).select_related(
        "channel", "through_message", "created_by"
    )


def summary_get(*, user: User, summary_id: int) -> Summary:
    """A summary of one of the user's channels; anything else is 'not found'."""
    try:
        return summaries_for_user(user=user).get(pk=summary_id)
    except (Summary.DoesNotExist, ValueError, TypeError):
        raise NotFound("Summary not found.") from None


def import_get(*, user: User, import_id: int) -> ConversationImport:
    """One of the user's imports; anything else is 'not found'."""
    try:
        return ConversationImport.objects.get(owner=user, pk=import_id)
    except (ConversationImport.DoesNotExist, ValueError, TypeError):
        raise NotFound("Import not found.") from None


def import_channels(*, conversation_import: ConversationImport) -> QuerySet[ImportedChannel]:
    """The channels an import wrote, in the file's order, each with its channel loaded."""
    return ImportedChannel.objects.filter(conversation_import=conversation_import).select_related("channel")
