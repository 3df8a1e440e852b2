"""A channel's own settings (a JSON object): the keys it may hold and their types.
The compaction app reads them (opt-out, own threshold); chatcore keeps them valid."""

from typing import Any

from django.core.exceptions import ValidationError

SETTINGS_KEYS = {"auto_compaction", "compaction_threshold", "recall_tool"}


def channel_settings_validate(value: Any) -> dict:
    """The only keys a channel's settings may hold, with their types."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError({"settings": "Settings must be an object."})
    unknown = set(value) - SETTINGS_KEYS
    if unknown:
        raise ValidationError(
            {
                "settings": f"Unknown setting(s): {', '.join(sorted(unknown))}. "
                f"Allowed: {', '.join(sorted(SETTINGS_KEYS))}."
            }
        )
    cleaned: dict = {}
    if "auto_compaction" in value and value["auto_compaction"] is not None:
        if not isinstance(value["auto_compaction"], bool):
            raise ValidationError({"settings": "auto_compaction must be true or false."})
        cleaned["auto_compaction"] = value["auto_compaction"]
    if "recall_tool" in value and value["recall_tool"] is not None:
        if not isinstance(value["recall_tool"], bool):
            raise ValidationError({"settings": "recall_tool must be true or false."})
        cleaned["recall_tool"] = value["recall_tool"]
    if "compaction_threshold" in value and value["compaction_threshold"] is not None:
        threshold = value["compaction_threshold"]
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold < 1:
            raise ValidationError(
                {
                    "settings": "compaction_threshold must be a number between 0 and 1, "
                    "exclusive (0.7 means 70% of the context window)."
                }
            )
        cleaned["compaction_threshold"] = float(threshold)
    return cleaned
