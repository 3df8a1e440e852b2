from django.urls import include, path

from chatcore.api import data_control, tokens, views

# A channel's sub-resources, under channels/<id>/ (the prefix and its converter written once).
channel_urls = [
    path("", views.ChannelDetailView.as_view(), name="api-channel"),
    path("messages/", views.MessageListView.as_view(), name="api-messages"),
    path("reply/", views.reply_endpoint, name="api-reply"),
    path("cursor/", views.CursorView.as_view(), name="api-cursor"),
    path("context/", views.ContextView.as_view(), name="api-context"),
    path("export/", data_control.ChannelExportView.as_view(), name="api-channel-export"),
]

urlpatterns = [
    path("channels/", views.ChannelListView.as_view(), name="api-channels"),
    path("channels/<int:channel_id>/", include(channel_urls)),
    path("tokens/", tokens.ApiTokenListView.as_view(), name="api-tokens"),
    path("tokens/<int:token_id>/", tokens.ApiTokenDetailView.as_view(), name="api-token"),
    path("summaries/<int:summary_id>/purge/", data_control.SummaryPurgeView.as_view(), name="api-summary-purge"),
]
