"""Refuse to listen beyond loopback without authentication, unless told ``--insecure``."""

import ipaddress
import logging

from evallens.auth._errors import UnsafeBind

logger = logging.getLogger(__name__)

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and the usual names of localhost; False for 0.0.0.0 and the rest."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def ensure_safe_bind(host: str, auth_enabled: bool, insecure: bool, component: str = "evallens") -> None:
    """Raise ``UnsafeBind`` when ``host`` is reachable from other machines and auth is off.

    ``insecure`` lets it start anyway, with a warning on every start.
    """
    if auth_enabled or is_loopback(host):
        return
    if insecure:
        logger.warning(
            "%s listens on %s WITHOUT authentication (--insecure): anyone who reaches it can read and write",
            component,
            host,
        )
        return
    raise UnsafeBind(
        f"{component} would listen on {host} without authentication: set EVALLENS_AUTH_ENABLED=true "
        "and create keys with `evallens keys create --project NAME`, or bind 127.0.0.1 "
        "(--insecure starts it anyway)"
    )
