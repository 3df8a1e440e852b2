from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponseRedirect
from django.templatetags.static import static
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView


def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """Browsers ask for /favicon.ico on every page (the admin's, the API docs'): answer with the icon."""
    return HttpResponseRedirect(static("chatcore/favicon.svg"))


urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    # /healthz, /readyz, /metrics: for load balancers and Prometheus.
    path("", include("compaction.observability.urls")),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file (?script), so the page needs no inline
    # script under the Content-Security-Policy; templates/drf_spectacular/swagger_ui.html drops its inline style.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Everything the apps serve, as any host mounts it (here at the root): the pages, api/ and v1/.
    path("", include("compaction.urls")),
]

handler404 = "project.errors.not_found"
handler500 = "project.errors.server_error"
