from django.urls import path

from compaction.gateway import views

urlpatterns = [
    path("chat/completions", views.chat_completions, name="v1-chat-completions"),
    path("models", views.models_list, name="v1-models"),
    path("models/<path:name>", views.model_detail, name="v1-model"),
]
