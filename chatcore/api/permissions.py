"""Staff endpoints ask what the admin asks: staff, and the permission of the operation (chatcore.permissions)."""

from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from chatcore.permissions import StaffRule


class StaffPermissions(BasePermission):
    """A view's `staff_rules` map methods to the StaffRule its service also checks; a method the map leaves out is
    open to whoever the view's other permission classes let in (list IsAuthenticated before this class). Refused:
    the rule's PermissionDenied, the service's own 403 body (what is missing, `permissions`), raised before the
    body is read or any object is looked up."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        rules: dict[str, StaffRule] = getattr(view, "staff_rules", {})
        rule = rules.get("GET" if request.method == "HEAD" else str(request.method))
        if rule is not None:
            rule.check(request.user)
        return True
