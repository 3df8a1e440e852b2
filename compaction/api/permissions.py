"""Who may call compaction's endpoints beyond being signed in."""

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView


class StaffOnly(BasePermission):
    """Staff only, whatever the method (exports hold every profile's prompts)."""

    message = "Only staff can change compaction profiles."
    code = "forbidden"

    def has_permission(self, request: Request, view: APIView) -> bool:
        return bool(request.user and request.user.is_staff)


class StaffWrites(StaffOnly):
    """Everyone signed in reads; only staff write."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        return request.method in SAFE_METHODS or super().has_permission(request, view)
