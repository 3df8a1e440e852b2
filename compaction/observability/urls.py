"""The operator's endpoints; a site mounts them where its balancers and Prometheus look (the project: at the root)."""

from django.urls import path

from compaction.observability import views

app_name = "observability"

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", views.metrics, name="metrics"),
]
