"""A URL conf that mounts nothing of the apps."""

urlpatterns: list = []
