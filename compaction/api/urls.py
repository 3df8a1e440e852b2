from django.urls import path

from compaction.api import imports, views

urlpatterns = [
    path("channels/<int:channel_id>/compact/", views.CompactView.as_view(), name="api-compact"),
    path("channels/<int:channel_id>/branch/", views.BranchView.as_view(), name="api-branch"),
    path("channels/<int:channel_id>/search/", views.ChannelSearchView.as_view(), name="api-channel-search"),
    path("channels/<int:channel_id>/summaries/", views.ChannelSummaryListView.as_view(), name="api-summaries"),
    path("summaries/<int:summary_id>/revert/", views.SummaryRevertView.as_view(), name="api-summary-revert"),
    path("imports/", imports.ImportView.as_view(), name="api-imports"),
    path("profiles/", views.ProfileListView.as_view(), name="api-profiles"),
    path("profiles/export/", views.ProfileExportView.as_view(), name="api-profiles-export"),
    path("profiles/import/", views.ProfileImportView.as_view(), name="api-profiles-import"),
    path("profiles/<int:profile_id>/", views.ProfileDetailView.as_view(), name="api-profile"),
    path("profiles/<int:profile_id>/duplicate/", views.ProfileDuplicateView.as_view(), name="api-profile-duplicate"),
    path("profiles/<int:profile_id>/reset/", views.ProfileResetView.as_view(), name="api-profile-reset"),
]
