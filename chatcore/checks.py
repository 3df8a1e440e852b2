"""System checks of what a host site must provide for the apps (`manage.py check` names each missing
piece with its fix): the apps they build on, the log-in page, the apps' URLs mounted."""

from django.apps import apps
from django.conf import settings
from django.core.checks import Error, Warning, register
from django.shortcuts import resolve_url
from django.urls import NoReverseMatch, reverse

# The apps chatcore and compaction build on, each with what it is for.
REQUIRED_APPS = {
    "rest_framework": "the REST API",
    "django_q": "the scanner and automatic compaction (a django-q2 cluster)",
    "django.contrib.auth": "people, their permissions and log-in",
    "django.contrib.contenttypes": "permissions and the audit trail",
    "django.contrib.sessions": "the pages' log-in session",
    "django.contrib.messages": "the pages' notices",
    "django.contrib.staticfiles": "the pages' CSS and scripts",
}


@register()
def required_apps(app_configs, **kwargs):
    return [
        Error(
            f"{name} is not installed; the chat apps need it for {purpose}.",
            hint=f'Add "{name}" to INSTALLED_APPS.',
            id="chatcore.E001",
        )
        for name, purpose in REQUIRED_APPS.items()
        if not apps.is_installed(name)
    ]


@register()
def login_page(app_configs, **kwargs):
    try:
        resolve_url(settings.LOGIN_URL)
    except NoReverseMatch:
        return [
            Error(
                f"LOGIN_URL ({settings.LOGIN_URL!r}) names no URL of this site; the chat pages send people "
                "there to log in.",
                hint='Set LOGIN_URL to your log-in page\'s URL or name (e.g. "login" for '
                'django.contrib.auth.urls, or "admin:login").',
                id="chatcore.E002",
            )
        ]
    return []


@register()
def urls_mounted(app_configs, **kwargs):
    try:
        reverse("chat:channels")
    except NoReverseMatch:
        return [
            Warning(
                "The chat apps' URLs are not mounted: their pages, API and /v1 answer nowhere.",
                hint='Add path("chat/", include("compaction.urls")) (any prefix) to your ROOT_URLCONF.',
                id="chatcore.W001",
            )
        ]
    return []
