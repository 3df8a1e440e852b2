from django.contrib.auth import views as auth_views
from django.urls import path

from chatcore import account_views, views

app_name = "chat"

urlpatterns = [
    path("", views.channel_list, name="channels"),
    path("account/tokens/", account_views.token_list, name="tokens"),
    # Log-out by POST, then to LOGOUT_REDIRECT_URL (else the log-in page, settings.LOGIN_URL).
    path("account/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("account/tokens/<int:token_id>/revoke/", account_views.token_revoke, name="token-revoke"),
    path("channels/<int:channel_id>/", views.channel_detail, name="channel"),
    path("channels/<int:channel_id>/send/", views.message_send, name="send"),
    path("channels/<int:channel_id>/cursor/", views.cursor_switch, name="cursor"),
    path("channels/<int:channel_id>/messages/<int:message_id>/edit/", views.message_edit, name="edit"),
    path(
        "channels/<int:channel_id>/messages/<int:message_id>/regenerate/", views.message_regenerate, name="regenerate"
    ),
    path("channels/<int:channel_id>/summaries/<int:summary_id>/messages/", views.summary_originals, name="originals"),
]
