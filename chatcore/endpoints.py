"""Where a catalogue model's requests may go, and which variable's value they may carry.

A model row names an endpoint (`base_url`) and the environment variable that
holds its key (`api_key_env`); every call sends that variable's value to that
endpoint as a bearer token. Rows are written by staff, so without a rule a
person allowed to add a model could point it at their own server and name
`SECRET_KEY`: the server's secret would leave with the next reply. The rule
lives here, in one place, and is applied twice: by `LLMModel.clean()` (the
admin and every form say why a value is refused) and by the LLM gateway
(`chatcore.llm`, `chatcore.llm_chat`) before any request is sent, so that a
row written before the rule or straight through the ORM cannot leak either.

The rule (knobs in `chatcore.conf`):
- the key variable is empty, or matches `LLM_KEY_VARIABLES` (default
  `*_API_KEY`) and is not in `LLM_KEY_VARIABLES_DENIED` (the variables the
  server's own settings read: `SECRET_KEY`, `DATABASE_URL`, ...);
- the base URL is `https`, or `http` to a host in `LLM_HTTP_HOSTS`;
- a loopback host (127.0.0.0/8, ::1, 0.0.0.0, localhost) only when DEBUG is
  on or the host is in `LLM_HTTP_HOSTS`: it reaches the server's own
  services;
- link-local (169.254.0.0/16, fe80::/10) and cloud metadata addresses are
  refused always, in whatever spelling the resolver would accept (decimal,
  hex, octal, shortened, IPv6-mapped or embedded forms);
- no user name or password in the URL (a credential in a row, and the way
  `https://allowed@elsewhere` misleads a reader).

Host names are not resolved: a lookup at save time proves nothing about the
next call (DNS rebinding), and the product runs with no network. What keeps
a name that resolves to an internal service out is the https rule and the
`LLM_HTTP_HOSTS` allow-list. An empty base URL uses the operator's
`OPENAI_BASE_URL` (or OpenAI's own), which comes from the environment, as
the allow-lists do, and is not checked.
"""

import functools
import ipaddress
import re
import socket
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Protocol
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

from chatcore import conf

ENDPOINT_FIELDS = ("provider", "base_url", "api_key_env")
ENDPOINT_PERMISSION = "chatcore.change_llmmodel_endpoint"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Instance metadata services: they answer with the machine's cloud credentials.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(address)
    for address in (
        "169.254.169.254",  # AWS, Azure, GCP, Oracle, DigitalOcean, OpenStack
        "169.254.170.2",  # AWS ECS task credentials
        "fd00:ec2::254",  # AWS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (legacy)
    )
)
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
# Prefixes whose addresses carry an IPv4 address that the network stack reaches.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_KEY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HOST_NAME = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*")
# What the C resolver reads as an IPv4 address (inet_aton): 1 to 4 parts, decimal, octal or hex.
_NUMERIC_HOST = re.compile(r"(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}")


class EndpointRefused(ValueError):
    """A model's endpoint or key variable breaks the rule: raised before any request is sent.

    A ValueError, so that the gateway treats it as that model's failure (recorded with its
    cause, the fallback tried), as it treats a missing key."""


def key_variable_problem(name: str) -> str | None:
    """Why a model may not name this environment variable, or None."""
    if not name:
        return None
    if name.startswith(("sk-", "sk_")):
        return "This looks like a key; give the variable's name instead."
    if not _KEY_NAME.fullmatch(name):
        return "Give the name of an environment variable, such as OPENAI_API_KEY."
    if name.upper() in {denied.strip().upper() for denied in _entries(conf.LLM_KEY_VARIABLES_DENIED)}:
        return f"{name} holds one of the server's own settings; a model may not send it anywhere."
    patterns = _entries(conf.LLM_KEY_VARIABLES)
    if not any(fnmatchcase(name, pattern.strip()) for pattern in patterns):
        allowed = ", ".join(patterns) or "none"
        return f"{name} is not a variable models may use (allowed: {allowed}; setting CHATCORE_LLM_KEY_VARIABLES)."
    return None


def host_address(host: str) -> IPAddress | None:
    """The address a host string stands for, in any spelling the resolver accepts; None for a name."""
    host = host.split("%", 1)[0]  # an IPv6 zone ("fe80::1%eth0")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _NUMERIC_HOST.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside an IPv4-mapped, -compatible, 6to4 or NAT64 IPv6 address."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64 or (int(address) >> 32 == 0 and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _forms(address: IPAddress) -> list[IPAddress]:
    embedded = _embedded_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else None
    return [address] if embedded is None else [address, embedded]


def _is_forbidden(host: str, address: IPAddress | None) -> bool:
    if address is None:
        return host in METADATA_NAMES
    return any(form.is_link_local or form in METADATA_ADDRESSES for form in _forms(address))


def _is_loopback(host: str, address: IPAddress | None) -> bool:
    if address is None:
        return host == "localhost" or host.endswith(".localhost")
    return any(form.is_loopback or form.is_unspecified for form in _forms(address))


def _canonical(host: str) -> str:
    """One spelling per host, so that the allow-list matches `127.1` as it matches `127.0.0.1`."""
    host = host.strip().lower().strip("[]").rstrip(".")
    address = host_address(host)
    return str(address) if address is not None else host


def _http_allowed(host: str) -> bool:
    allowed = {_canonical(entry) for entry in _entries(conf.LLM_HTTP_HOSTS)}
    return _canonical(host) in allowed


def _entries(value: Iterable[str] | str) -> list[str]:
    return [part for part in (value.split(",") if isinstance(value, str) else value) if part.strip()]


def base_url_problem(url: str) -> str | None:
    """Why a model's requests may not go to this base URL, or None. Empty: the operator's default."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 (an invalid port raises here)
    except ValueError:
        return "This is not a valid URL."
    if parts.scheme not in ("http", "https"):
        return "Give an https:// URL."
    if "@" in parts.netloc:
        return "Leave user names and passwords out of the URL: the key comes from the key variable."
    host = (parts.hostname or "").rstrip(".")
    address = host_address(host)
    if not host or (address is None and not _HOST_NAME.fullmatch(host)):
        return "Give a host name or an IP address (ASCII; an international name in its xn-- form)."
    if _is_forbidden(host, address):
        shown = host if address is None or str(address) == host else f"{host} ({address})"
        return f"{shown} is a link-local or cloud metadata address; models may never call it."
    allowed = _http_allowed(host)
    if _is_loopback(host, address) and not (allowed or settings.DEBUG):
        return f"{host} is this machine; allowed only with DEBUG on or when listed in CHATCORE_LLM_HTTP_HOSTS."
    if parts.scheme == "http" and not allowed and not (settings.DEBUG and _is_loopback(host, address)):
        return f"Use https:// (plain http only to hosts listed in CHATCORE_LLM_HTTP_HOSTS; {host} is not)."
    return None


def endpoint_problems(*, base_url: str, api_key_env: str) -> dict[str, str]:
    """Field → why it is refused; empty when the endpoint and key variable are allowed.

    The rule is a function of the two values and of the settings it reads (DEBUG and the allow- and
    deny-lists), which are read here at every call and are part of the memo's key: the gateway applies it
    before every model call, and a changed setting or row is a new key, judged afresh."""
    key = (
        base_url or "",
        api_key_env or "",
        bool(settings.DEBUG),
        _frozen(conf.LLM_HTTP_HOSTS),
        _frozen(conf.LLM_KEY_VARIABLES),
        _frozen(conf.LLM_KEY_VARIABLES_DENIED),
    )
    return dict(_problems_judged(key))


def _frozen(value: Iterable[str] | str) -> tuple[str, ...] | str:
    return value if isinstance(value, str) else tuple(value)


# The distinct (row, settings) pairs judged kept at once: a site has a handful of model endpoints.
JUDGED_ENDPOINTS_KEPT = 256


@functools.lru_cache(maxsize=JUDGED_ENDPOINTS_KEPT)
def _problems_judged(key: tuple) -> tuple[tuple[str, str], ...]:
    """`endpoint_problems` for one key; the settings in the key are those in force as this call runs."""
    base_url, api_key_env = key[0], key[1]
    problems = {"base_url": base_url_problem(base_url), "api_key_env": key_variable_problem(api_key_env)}
    return tuple((field, problem) for field, problem in problems.items() if problem)


def endpoint_validate(*, base_url: str, api_key_env: str) -> None:
    """For forms and `clean()`: a ValidationError naming each refused field."""
    problems = endpoint_problems(base_url=base_url, api_key_env=api_key_env)
    if problems:
        raise ValidationError(problems)


class Endpoint(Protocol):
    """What the rule reads of a model: `chatcore.models.LLMModel` is one (described here rather than
    imported, since the model's `clean()` applies this module's rule)."""

    base_url: str
    api_key_env: str


def endpoint_check(model: Endpoint) -> None:
    """For the gateway, before any request: the same rule on the row as it is now."""
    problems = endpoint_problems(base_url=model.base_url, api_key_env=model.api_key_env)
    if problems:
        causes = "; ".join(f"{field}: {problem}" for field, problem in problems.items())
        raise EndpointRefused(f"endpoint refused ({causes})")
