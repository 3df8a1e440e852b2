"""App knobs read from Django settings on access, not at import.

An app's conf.py builds one `AppSettings` with its setting prefix and
documented defaults; its module-level `__getattr__` hands attribute reads to
it (PEP 562, as django-allauth does), so callers keep writing
`conf.LEASE_SECONDS`. Values are cached until Django's `setting_changed`
signal names one of the app's settings (pytest-django's `settings` fixture,
`override_settings`), which empties the cache, as DRF's
`api_settings.reload()` does. Tests therefore change knobs through
`settings`, never by patching module constants.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed


class AppSettings:
    """The knobs of one app: `prefix + NAME` in Django settings, else the default.

    `derived` values are computed from other settings (any of them, not only
    the app's) and recomputed on every change of settings.
    """

    def __init__(
        self,
        prefix: str,
        defaults: Mapping[str, Any],
        derived: Mapping[str, Callable[[], Any]] | None = None,
    ) -> None:
        self.prefix = prefix
        self.defaults = dict(defaults)
        self.derived = dict(derived or {})
        self._cache: dict[str, Any] = {}
        setting_changed.connect(self._on_setting_changed, weak=False, dispatch_uid=f"app-settings-{prefix}")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or (name not in self.defaults and name not in self.derived):
            raise AttributeError(name)
        try:
            return self._cache[name]
        except KeyError:
            pass
        if name in self.derived:
            value = self.derived[name]()
        else:
            value = getattr(settings, self.prefix + name, self.defaults[name])
        self._cache[name] = value
        return value

    def reload(self) -> None:
        self._cache.clear()

    def _on_setting_changed(self, *, setting: str, **kwargs: Any) -> None:
        # Derived values may depend on any setting (timeouts, the cluster's
        # configuration), so every change empties the cache: it is cheap.
        self.reload()
