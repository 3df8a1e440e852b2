from django.urls import path

from chatcore.api import data_control, tokens, views

urlpatterns = [
    path("channels/", views.ChannelListView.as_view(), name="api-channels"),
    path("channels/<int:channel_id>/", views.ChannelDetailView.as_view(), name="api-channel"),
    path("channels/<int:channel_id>/messages/", views.MessageListView.as_view(), name="api-messages"),
    path("channels/<int:channel_id>/reply/", views.reply_endpoint, name="api-reply"),
    path("channels/<int:channel_id>/cursor/", views.CursorView.as_view(), name="api-cursor"),
    path("channels/<int:channel_id>/context/", views.ContextView.as_view(), name="api-context"),
    path("channels/<int:channel_id>/export/", data_control.ChannelExportView.as_view(), name="api-channel-export"),
    path("tokens/", tokens.ApiTokenListView.as_view(), name="api-tokens"),
    path("tokens/<int:token_id>/", tokens.ApiTokenDetailView.as_view(), name="api-token"),
    path("summaries/<int:summary_id>/purge/", data_control.SummaryPurgeView.as_view(), name="api-summary-purge"),
]
