"""Which proxy a recording's requests go through: the one the environment names for the server's scheme
(``http_proxy``/``HTTP_PROXY``, ``https_proxy``/``HTTPS_PROXY``, else ``all_proxy``/``ALL_PROXY``), unless
``no_proxy``/``NO_PROXY`` names the server's host, as curl, pip and httpx read them. The recording honours it
(a machine that reaches the internet only through a proxy can record) and the plan says which one it took, or
that NO_PROXY sent it around one, so a proxy is never used or ignored without a word. The decision is made
here, once, and both the plan's line and the transport follow it (docs/recording.md, "Proxies")."""

from __future__ import annotations

import importlib.util
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Route:
    """How requests to one server go: `proxy` (a URL, or None for directly), the variable that named it, and
    `bypassed` (the proxy variable NO_PROXY overrode for this host)."""

    proxy: str | None = None
    variable: str | None = None
    bypassed: str | None = None
    problem: str | None = None  # a proxy that cannot be used: the run refuses to start, saying why

    def line(self) -> str | None:
        """The plan's line about the route (None when the environment names no proxy at all)."""
        if self.proxy:
            return f"sys1cal: through the proxy {self.proxy} (from {self.variable} in the environment)"
        if self.bypassed:
            return f"sys1cal: directly, not through the proxy in {self.bypassed}: NO_PROXY names this server"
        return None


def _first(environ: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    for name in names:
        value = (environ.get(name) or "").strip()
        if value:
            return name, value
    return None


def route_for(url: str, environ: Mapping[str, str]) -> Route:
    """The route of requests to `url` under this environment."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    named = _first(environ, f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY")
    if named is None:
        return Route()
    variable, proxy = named
    no_proxy = _first(environ, "no_proxy", "NO_PROXY")
    if no_proxy and _bypassed(parts.hostname or "", parts.port, no_proxy[1]):
        return Route(bypassed=variable)
    if "://" not in proxy:
        proxy = f"http://{proxy}"  # curl's reading of a proxy given as host:port
    proxy_scheme = urlsplit(proxy).scheme.lower()
    problem = None
    if proxy_scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
        problem = (
            f"{variable} names a SOCKS proxy, which needs the socksio package: pip install 'httpx[socks]', or unset "
            f"{variable} (or add the server's host to NO_PROXY) to record directly"
        )
    elif proxy_scheme not in ("http", "https") and not proxy_scheme.startswith("socks"):
        problem = f"{variable} names a proxy of scheme {proxy_scheme!r}; use http://, https:// or socks5://"
    return Route(proxy=proxy, variable=variable, problem=problem)


def _bypassed(host: str, port: int | None, no_proxy: str) -> bool:
    """Whether a NO_PROXY list names `host`: ``*``, the host itself, a domain it is under (``.example.com`` or
    ``example.com``), ``host:port``, or a network it is in (``10.0.0.0/8``)."""
    host = host.lower().strip("[]")
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        if entry.count(":") == 1 and not entry.startswith("["):  # host:port
            entry, _, wanted = entry.partition(":")
            if str(port) != wanted:
                continue
        entry = entry.strip("[]").removeprefix("*").lstrip(".")
        if host == entry or host.endswith("." + entry) or _in_network(host, entry):
            return True
    return False


def _in_network(host: str, entry: str) -> bool:
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False


PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


def proxy_urls(environ: Mapping[str, str]) -> list[str]:
    """The proxy URLs the environment names (for the run's redactor: a proxy's password is a secret too)."""
    urls = []
    for name in PROXY_VARIABLES:
        value = (environ.get(name) or "").strip()
        if value:
            urls.append(value if "://" in value else f"http://{value}")
    return urls
