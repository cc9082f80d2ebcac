"""Who could reach a cluster's ports: this machine's addresses, and when to refuse to start.

Neither runtime authenticates anyone. TensorFlow's gRPC server listens on ``0.0.0.0:<port>``
(every IPv4 and IPv6 address) whatever ``TF_CONFIG`` names, and a client that reaches it can
run ops in the task, so read and write the learner's files. MXNet's ps-lite listens on
``DMLC_NODE_HOST`` (127.0.0.1 here), but its servers unpickle what they receive: the same
risk wherever it listens for other machines.

:func:`network_exposure` sorts this machine's addresses (less loopback and link-local) with
:mod:`ipaddress` into *public* (``is_global``) and *private* (everything else). For a
TensorFlow cluster (:func:`check_exposure`): loopback only, nothing to say; private only, a
banner once per process naming them; a public address, :class:`ExposureError` unless
``allow_external=True`` or ``SERIES_ALLOW_EXTERNAL=1``. :func:`network_banner` prints the
same facts in notebooks.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Set to 1 to let a TensorFlow cluster start on a machine with a public address.
ENV_VAR = "SERIES_ALLOW_EXTERNAL"
_PORT_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_WIDTH = 92
_warned = False


class ExposureError(RuntimeError):
    """A cluster would listen, unauthenticated, on an address the internet can reach."""


@dataclass(frozen=True)
class Address:
    """One address of this machine, on one interface, and whether it is globally routable."""

    interface: str
    address: str
    public: bool

    def __str__(self) -> str:
        return f"{self.address} ({self.interface})"


@dataclass(frozen=True)
class NetworkExposure:
    """This machine's addresses other machines could use, public and private."""

    addresses: tuple[Address, ...]

    @property
    def public(self) -> tuple[Address, ...]:
        return tuple(a for a in self.addresses if a.public)

    @property
    def private(self) -> tuple[Address, ...]:
        return tuple(a for a in self.addresses if not a.public)

    @property
    def level(self) -> str:
        """``public``, ``private`` or ``loopback`` (no address but the machine's own)."""
        if self.public:
            return "public"
        return "private" if self.addresses else "loopback"

    def banner(self) -> str:
        """A few lines: which addresses, what a cluster's ports are exposed to, what to do."""
        if self.level == "loopback":
            return ("Network: loopback only. No other machine can reach this one, so the "
                    "clusters' ports stay on it.")
        protect = (f"drop incoming connections to ports {ephemeral_port_range()} from other "
                   "machines (a firewall), or use a private network, a VPN or SSH tunnels")
        if self.level == "public":
            private = f"; private {_listed(self.private)}" if self.private else ""
            head = f"Network: PUBLIC address(es) {_listed(self.public)}{private}."
            who = "anyone on the internet"
            todo = (f"{protect[0].upper()}{protect[1:]}; then pass allow_external=True to "
                    f"LocalTFCluster or set {ENV_VAR}=1 (until then it refuses to start).")
        else:
            head = f"Network: private address(es) {_listed(self.private)}."
            who = "any machine on that network"
            todo = f"If you do not trust that network, {protect}."
        paragraphs = [
            head,
            "TensorFlow's gRPC servers listen on every address (0.0.0.0, [::]) with no "
            f"authentication: while a cluster runs, {who} can connect to its ports and run "
            "code as you.",
            todo,
            "(MXNet's ps-lite listens on 127.0.0.1 here: only this machine can reach it.)",
        ]
        lines = [line for text in paragraphs for line in textwrap.wrap(text, _WIDTH)]
        width = max(len(line) for line in lines)
        return "\n".join(["=" * width, *lines, "=" * width])


def _listed(addresses: tuple[Address, ...]) -> str:
    return ", ".join(str(a) for a in addresses)


def ephemeral_port_range() -> str:
    """``32768-60999``: where the OS (and so the series) picks free ports, read from Linux."""
    try:
        low, high = _PORT_RANGE_FILE.read_text().split()
        return f"{int(low)}-{int(high)}"
    except (OSError, ValueError):
        return "in the ephemeral range"


def machine_addresses(interfaces: dict[str, list[Any]] | None = None) -> tuple[Address, ...]:
    """This machine's addresses other machines could use (``psutil.net_if_addrs()``).

    Loopback, link-local, multicast and unspecified addresses are left out: nobody else
    can reach a port through them. ``interfaces`` replaces psutil's answer (for tests).
    """
    if interfaces is None:
        import psutil  # noqa: PLC0415  (only this check needs it)

        interfaces = psutil.net_if_addrs()
    found = []
    for interface, entries in sorted(interfaces.items()):
        for entry in entries:
            if entry.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            try:
                ip = ipaddress.ip_address(entry.address.split("%", 1)[0])
            except ValueError:
                continue
            if ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_unspecified:
                continue
            found.append(Address(interface, str(ip), ip.is_global))
    return tuple(found)


def network_exposure(interfaces: dict[str, list[Any]] | None = None) -> NetworkExposure:
    """This machine's reachable addresses, sorted into public and private."""
    return NetworkExposure(machine_addresses(interfaces))


def network_banner() -> NetworkExposure:
    """Print what other machines could reach on this one while a cluster runs; return it.

    For the top of every notebook that starts a cluster: on a machine with a public
    address it says that TensorFlow clusters will not start without ``allow_external``.
    Once shown, clusters of this process do not print it again.
    """
    global _warned
    exposure = network_exposure()
    print(exposure.banner())
    _warned = True
    return exposure


def external_allowed(allow_external: bool = False) -> bool:
    """True if the caller or ``$SERIES_ALLOW_EXTERNAL`` (``1``) accepts a public address."""
    if not isinstance(allow_external, bool):
        raise ValueError(f"allow_external must be True or False, not {allow_external!r}")
    return allow_external or os.environ.get(ENV_VAR, "").strip() == "1"


def check_exposure(allow_external: bool = False, what: str = "this TensorFlow cluster",
                   exposure: NetworkExposure | None = None) -> NetworkExposure:
    """Refuse (:class:`ExposureError`) or warn before starting servers that listen everywhere.

    Public address and not allowed: refused, with why and what to do. Otherwise, if
    the machine has any reachable address, the banner is printed once per process.
    """
    global _warned
    allowed = external_allowed(allow_external)
    exposure = exposure if exposure is not None else network_exposure()
    if exposure.level == "public" and not allowed:
        raise ExposureError(
            f"{what} was not started: this machine has a public address "
            f"({_listed(exposure.public)}), and TensorFlow's gRPC servers listen on every "
            "address with no authentication, so anyone on the internet who finds a port "
            "could run code as you while the cluster runs. Make the ports unreachable from "
            f"outside first (a firewall that drops incoming connections to ports "
            f"{ephemeral_port_range()}, a private network or VPN, or SSH tunnels), then pass "
            f"allow_external=True or set {ENV_VAR}=1."
        )
    if exposure.level != "loopback" and not _warned:
        print(exposure.banner())
        _warned = True
    return exposure
