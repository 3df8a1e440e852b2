"""Writes to the model catalogue: who may decide where a model's requests go, and the record of it.

A model's provider, base URL and key variable decide which server receives
which environment variable's value with every call (chatcore.endpoints), so
changing them is a permission of its own, `chatcore.change_llmmodel_endpoint`,
which "change LLM model" does not include and which only superusers hold
unless someone grants it. Everything else about a model (label, window,
prices, active) stays with the ordinary permissions. Each new model and
each change of its endpoint leaves an audit row with the actor and the
values before and after (names and URLs only: keys are never stored).
"""

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from chatcore.endpoints import ENDPOINT_FIELDS, ENDPOINT_PERMISSION
from chatcore.errors import PermissionDenied
from chatcore.models import LLMModel
from chatcore.services import audit_record


def endpoint_change_allowed(*, actor: User) -> bool:
    return actor.is_active and actor.has_perm(ENDPOINT_PERMISSION)


def _stored_endpoint(model: LLMModel) -> dict[str, Any]:
    """The endpoint as stored (locked until the save), or the field defaults for a new model."""
    if model.pk is not None:
        stored = LLMModel.objects.select_for_update().filter(pk=model.pk).values(*ENDPOINT_FIELDS).first()
        if stored is not None:
            return stored
    blank = LLMModel()
    return {field: getattr(blank, field) for field in ENDPOINT_FIELDS}


@transaction.atomic
def llm_model_save(*, actor: User, model: LLMModel) -> LLMModel:
    """Validate and save a catalogue model (new or changed).

    Raises PermissionDenied when the endpoint differs from what is stored (from the defaults,
    for a new model) and the actor lacks the endpoint permission; ValidationError when the
    endpoint breaks the rule of chatcore.endpoints.
    """
    before = _stored_endpoint(model)
    changes = {
        field: {"from": before[field], "to": getattr(model, field)}
        for field in ENDPOINT_FIELDS
        if before[field] != getattr(model, field)
    }
    if changes and not endpoint_change_allowed(actor=actor):
        raise PermissionDenied(
            "Changing a model's provider, base URL or key variable needs the permission "
            "“Can change an LLM model's provider, base URL and key variable”.",
            extra={"fields": sorted(changes)},
        )
    model.full_clean()
    created = model.pk is None
    model.save()
    if created or changes:
        audit_record(
            actor=actor,
            action="llm_model.create" if created else "llm_model.endpoint_change",
            resource=f"llm_model:{model.pk}",
            details={
                "name": model.name,
                "endpoint": {field: getattr(model, field) for field in ENDPOINT_FIELDS},
                "changes": changes,
            },
        )
    return model
