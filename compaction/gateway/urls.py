from django.urls import path, re_path

from compaction.gateway import views

# Each path also with a trailing slash (clients join a base URL ending in "/v1/" with "/chat/completions/"
# and the like). Any other path under it is answered with the protocol's 404 error object.
app_name = "chat_v1"

urlpatterns = [
    re_path(r"^chat/completions/?$", views.chat_completions, name="chat-completions"),
    re_path(r"^models/?$", views.models_list, name="models"),
    path("models/<path:name>", views.model_detail, name="model"),
    re_path(r"^", views.unknown_url, name="unknown-url"),
]
