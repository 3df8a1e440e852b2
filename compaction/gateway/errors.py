"""The error object of the OpenAI protocol, raised anywhere in the gateway and answered by its views."""


class ProtocolError(Exception):
    """An error object of the OpenAI protocol: {"error": {"message", "type", "param", "code"}} with a status."""

    def __init__(
        self, message: str, *, status: int = 400, type: str = "invalid_request_error", code: str | None = None,
        param: str | None = None, headers: dict | None = None,
    ):  # fmt: skip
        super().__init__(message)
        self.message, self.status, self.type, self.code, self.param = message, status, type, code, param
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}
