"""Servers for this machine only: which ``Host`` and ``Origin`` headers they answer.

``toolproof serve`` (and the servers of external agents) and ``toolproof view`` listen on
127.0.0.1 by default. That alone does not keep other parties out: a web page the user has
open can send requests to 127.0.0.1 (its ``Origin`` names the page's site), and a name the
page controls can resolve to 127.0.0.1 (DNS rebinding: its ``Host`` names that site). Both
are refused here, for every such server.
"""

from __future__ import annotations

__all__ = ["is_loopback", "local_hosts", "refusal"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable only from this machine."""
    if host.lower() == "localhost":
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def local_hosts(host: str, port: int) -> set[str]:
    """The ``Host`` header values of a loopback server on ``port``, in lower case."""
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    names = {shown.lower(), "127.0.0.1", "localhost", "[::1]"}
    hosts = {f"{name}:{port}" for name in names}
    if port == 80:  # clients leave the default port out of the header
        hosts |= names
    return hosts


def refusal(host: str, origin: str | None, hosts: set[str] | None) -> tuple[int, str] | None:
    """Why a request must be refused, as an HTTP status and a message; ``None`` to answer it.

    Args:
        host: The request's ``Host`` header.
        origin: Its ``Origin`` header (browsers send it with every request a page makes
            to another site, and with every ``POST``); ``None`` when absent.
        hosts: The ``Host`` values a loopback server answers (:func:`local_hosts`);
            ``None`` for a server on another address, which answers any name.
    """
    name = host.lower()
    if hosts is not None and name not in hosts:
        return 421, (
            f"unexpected Host header {host!r}: this server answers only requests addressed "
            "to this machine"
        )
    if origin is None:
        return None
    allowed = hosts if hosts is not None else {name}
    scheme, _, rest = origin.lower().partition("://")
    if scheme != "http" or rest not in allowed:
        return 403, (
            f"requests from web pages of other sites are refused (Origin {origin!r}): this "
            "server is for programs on this machine"
        )
    return None
