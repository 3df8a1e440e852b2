"""A host's URL conf: the apps under /chat/ by their one include, the host's own log-in page and a page
of its own (to show the apps leave the host's other URLs alone)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpResponse
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("hello/", lambda request: HttpResponse("host page"), name="hello"),
    path("chat/", include("compaction.urls")),
]
