"""Who may decide where a catalogue model's requests go: the endpoint permission in the admin and
in its service (chatcore.catalogue), and the audit row of every endpoint change."""

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.test import Client

from chatcore import catalogue
from chatcore.errors import PermissionDenied
from chatcore.models import AuditEntry, LLMModel
from tests.chatcore.factories import LLMModelFactory, UserFactory

ADD_URL = "/admin/chatcore/llmmodel/add/"
FORM = {
    "name": "gpt-4o",
    "label": "GPT-4o",
    "provider": "openai",
    "base_url": "",
    "api_key_env": "OPENAI_API_KEY",
    "context_window": "128000",
    "max_output_tokens": "4096",
    "price_in_per_million": "2.5",
    "price_out_per_million": "10",
    "is_active": "on",
}
ENDPOINT = ("provider", "base_url", "api_key_env")


# What the admin form says of a forbidden endpoint (as the page escapes it).
SERVER_SETTING = "holds one of the server&#x27;s own settings"
METADATA_ADDRESS = "link-local or cloud metadata address"


def change_url(model: LLMModel) -> str:
    return f"/admin/chatcore/llmmodel/{model.pk}/change/"


def logged_in(*codenames: str, superuser: bool = False) -> Client:
    user = UserFactory(is_staff=True, is_superuser=superuser)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="chatcore", codename__in=codenames))
    client = Client()
    client.force_login(user)
    client.user = user  # type: ignore[attr-defined]
    return client


@pytest.fixture
def model_editor(db):
    """A staff member with every ordinary permission on models, not the endpoint one."""
    return logged_in("add_llmmodel", "change_llmmodel", "view_llmmodel")


@pytest.fixture
def superuser(db):
    return logged_in(superuser=True)


@pytest.fixture
def catalogued(db):
    return LLMModelFactory(
        name="gpt-4o", label="GPT-4o", base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY"
    )


def endpoint_of(model: LLMModel) -> tuple:
    return tuple(LLMModel.objects.filter(pk=model.pk).values_list(*ENDPOINT).get())


def the_audit_entry(actor, action: str, model: LLMModel) -> AuditEntry:
    """The one audit entry written, checked to be `actor`'s `action` on `model`."""
    (entry,) = AuditEntry.objects.all()
    assert (entry.actor, entry.action, entry.resource) == (actor, action, f"llm_model:{model.pk}")
    return entry


def test_the_endpoint_permission_is_nobodys_by_default(db, model_editor, superuser):
    assert Permission.objects.filter(codename="change_llmmodel_endpoint", content_type__app_label="chatcore").exists()
    assert not catalogue.endpoint_change_allowed(actor=model_editor.user)
    assert catalogue.endpoint_change_allowed(actor=superuser.user)
    assert catalogue.endpoint_change_allowed(actor=logged_in("change_llmmodel_endpoint").user)


def test_without_the_permission_the_endpoint_fields_are_locked(model_editor, catalogued):
    page = model_editor.get(change_url(catalogued)).content.decode()
    for name in ENDPOINT:
        assert f'name="{name}"' in page
        tag = page[page.index(f'name="{name}"') - 200 : page.index(f'name="{name}"') + 200]
        assert "disabled" in tag, name
    assert "needs the permission" in page
    assert (
        'name="label"' in page and "disabled" not in page[page.index('name="label"') : page.index('name="label"') + 120]
    )


def test_a_crafted_post_of_the_endpoint_is_refused(model_editor, catalogued):
    data = {**FORM, "base_url": "https://attacker.example/v1", "api_key_env": "ATTACKER_API_KEY"}
    response = model_editor.post(change_url(catalogued), data)
    assert response.status_code == 403
    assert endpoint_of(catalogued) == ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY")
    assert not AuditEntry.objects.exists()


def test_an_editor_changes_the_rest_and_the_endpoint_stays(model_editor, catalogued):
    data = {name: value for name, value in FORM.items() if name not in ENDPOINT} | {"label": "GPT-4o (team)"}
    response = model_editor.post(change_url(catalogued), data)
    assert response.status_code == 302
    catalogued.refresh_from_db()
    assert catalogued.label == "GPT-4o (team)"
    assert endpoint_of(catalogued) == ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY")
    assert not AuditEntry.objects.exists()  # nothing about the endpoint changed


def test_an_editor_adds_a_model_with_the_default_endpoint_only(model_editor):
    crafted = {**FORM, "base_url": "https://attacker.example/v1", "api_key_env": "SECRET_KEY"}
    assert model_editor.post(ADD_URL, crafted).status_code == 403
    assert not LLMModel.objects.exists()
    data = {name: value for name, value in FORM.items() if name not in ENDPOINT}
    assert model_editor.post(ADD_URL, data).status_code == 302
    model = LLMModel.objects.get(name="gpt-4o")
    assert endpoint_of(model) == ("openai", "", "OPENAI_API_KEY")
    entry = the_audit_entry(model_editor.user, "llm_model.create", model)
    assert entry.details["endpoint"] == {"provider": "openai", "base_url": "", "api_key_env": "OPENAI_API_KEY"}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("api_key_env", "SECRET_KEY", SERVER_SETTING),
        ("api_key_env", "DATABASE_URL", SERVER_SETTING),
        ("base_url", "http://attacker.example/v1", "Use https://"),
        ("base_url", "https://169.254.169.254/latest", METADATA_ADDRESS),
        ("base_url", "https://metadata.google.internal/v1", METADATA_ADDRESS),
    ],
)
def test_the_admin_form_refuses_a_forbidden_endpoint_even_for_a_superuser(superuser, catalogued, field, value, message):
    response = superuser.post(change_url(catalogued), {**FORM, field: value})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert endpoint_of(catalogued) == ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY")
    assert not AuditEntry.objects.exists()


def test_an_endpoint_change_by_a_permitted_member_is_audited(catalogued):
    operator = logged_in("change_llmmodel", "view_llmmodel", "change_llmmodel_endpoint")
    data = {**FORM, "base_url": "https://llm.example.com/v1", "api_key_env": "MISTRAL_API_KEY"}
    assert operator.post(change_url(catalogued), data).status_code == 302
    assert endpoint_of(catalogued) == ("openai", "https://llm.example.com/v1", "MISTRAL_API_KEY")
    entry = the_audit_entry(operator.user, "llm_model.endpoint_change", catalogued)
    assert entry.details["changes"] == {
        "base_url": {"from": "https://api.openai.com/v1", "to": "https://llm.example.com/v1"},
        "api_key_env": {"from": "OPENAI_API_KEY", "to": "MISTRAL_API_KEY"},
    }


def test_the_service_refuses_an_endpoint_change_without_the_permission(model_editor, catalogued):
    catalogued.base_url = "https://attacker.example/v1"
    with pytest.raises(PermissionDenied) as error:
        catalogue.llm_model_save(actor=model_editor.user, model=catalogued)
    assert error.value.extra == {"fields": ["base_url"]}
    assert endpoint_of(catalogued) == ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY")
    assert not AuditEntry.objects.exists()


def test_the_service_validates_before_it_saves(superuser, catalogued):
    catalogued.api_key_env = "SECRET_KEY"
    with pytest.raises(ValidationError):
        catalogue.llm_model_save(actor=superuser.user, model=catalogued)
    assert endpoint_of(catalogued) == ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY")
    assert not AuditEntry.objects.exists()
