from django.urls import URLPattern, URLResolver, include, path

from compaction.api import imports, views

# Compaction's sub-resources of a channel, under channels/<id>/ beside chatcore's.
channel_urls = [
    path("compact/", views.CompactView.as_view(), name="compact"),
    path("branch/", views.BranchView.as_view(), name="branch"),
    path("search/", views.ChannelSearchView.as_view(), name="channel-search"),
    path("summaries/", views.ChannelSummaryListView.as_view(), name="summaries"),
]

# One profile and what staff do to it, under profiles/<id>/.
profile_urls = [
    path("", views.ProfileDetailView.as_view(), name="profile"),
    path("duplicate/", views.ProfileDuplicateView.as_view(), name="profile-duplicate"),
    path("reset/", views.ProfileResetView.as_view(), name="profile-reset"),
]

urlpatterns: list[URLPattern | URLResolver] = [
    path("channels/<int:channel_id>/", include(channel_urls)),
    path("summaries/<int:summary_id>/revert/", views.SummaryRevertView.as_view(), name="summary-revert"),
    path("imports/", imports.ImportView.as_view(), name="imports"),
    path("imports/<int:import_id>/", imports.ImportStatusView.as_view(), name="import"),
    path("profiles/", views.ProfileListView.as_view(), name="profiles"),
    path("profiles/export/", views.ProfileExportView.as_view(), name="profiles-export"),
    path("profiles/import/", views.ProfileImportView.as_view(), name="profiles-import"),
    path("profiles/<int:profile_id>/", include(profile_urls)),
]
