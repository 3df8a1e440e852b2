from django.urls import URLPattern, URLResolver, include, path

from chatcore.api import data_control, teams, tokens, usage, views

# A channel's sub-resources, under channels/<id>/ (the prefix and its converter written once).
channel_urls = [
    path("", views.ChannelDetailView.as_view(), name="channel"),
    path("messages/", views.MessageListView.as_view(), name="messages"),
    path("reply/", views.reply_endpoint, name="reply"),
    path("cursor/", views.CursorView.as_view(), name="cursor"),
    path("context/", views.ContextView.as_view(), name="context"),
    path("export/", data_control.ChannelExportView.as_view(), name="channel-export"),
]

# A team's sub-resources, under teams/<id>/.
team_urls = [
    path("", teams.TeamDetailView.as_view(), name="team"),
    path("members/", teams.TeamMemberListView.as_view(), name="team-members"),
    path("members/<int:user_id>/", teams.TeamMemberDetailView.as_view(), name="team-member"),
    path("roles/<str:role>/", teams.TeamRoleView.as_view(), name="team-role"),
]

urlpatterns: list[URLPattern | URLResolver] = [
    path("channels/", views.ChannelListView.as_view(), name="channels"),
    path("channels/<int:channel_id>/", include(channel_urls)),
    path("teams/", teams.TeamListView.as_view(), name="teams"),
    path("teams/<int:team_id>/", include(team_urls)),
    path("usage/", usage.UsageListView.as_view(), name="usage"),
    path("tokens/", tokens.ApiTokenListView.as_view(), name="tokens"),
    path("tokens/<int:token_id>/", tokens.ApiTokenDetailView.as_view(), name="token"),
    path("summaries/<int:summary_id>/purge/", data_control.SummaryPurgeView.as_view(), name="summary-purge"),
]
