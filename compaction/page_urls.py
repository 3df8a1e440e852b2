from django.urls import path

from compaction import views
from compaction.imports.pages import conversations_upload, import_progress
from compaction.recall.pages import channel_search

app_name = "compaction"

urlpatterns = [
    path("imports/", conversations_upload, name="import"),
    path("imports/<int:import_id>/", import_progress, name="import-progress"),
    path("channels/<int:channel_id>/compact/", views.compact_panel, name="panel"),
    path("channels/<int:channel_id>/search/", channel_search, name="search"),
    path("channels/<int:channel_id>/summaries/<int:summary_id>/undo/", views.summary_undo, name="undo"),
    path("channels/<int:channel_id>/settings/", views.channel_settings, name="settings"),
]
