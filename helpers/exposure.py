"""Who could reach a cluster's ports: this machine's addresses, and when to refuse to start.

Neither runtime of the series authenticates anyone. TensorFlow's gRPC server listens on
every address (``0.0.0.0``, ``[::]``) whatever ``TF_CONFIG`` names, and whoever reaches
a port can run code as the learner; MXNet's ps-lite listens on ``DMLC_NODE_HOST``
(127.0.0.1 here) but its servers unpickle what they are sent. So this machine's
addresses, loopback and link-local left out, are sorted with :mod:`ipaddress` into
public (globally routable) and private ones. A TensorFlow cluster then starts quietly on
a loopback-only machine, starts with a banner (once per process) on a private network,
and is refused on a public address unless ``allow_external=True`` or
``SERIES_ALLOW_EXTERNAL=1`` says its ports were made unreachable from outside.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

#: Set to 1 to let a TensorFlow cluster start on a machine with a public address.
ENV_VAR = "SERIES_ALLOW_EXTERNAL"
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


def _listed(addresses: tuple[Address, ...]) -> str:
    return ", ".join(str(a) for a in addresses)


def ephemeral_port_range() -> str:
    """``32768-60999``: where the OS (and so the series) picks free ports, read from Linux."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return f"{int(low)}-{int(high)}"
    except (OSError, ValueError):
        return "in the ephemeral range"


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
        return "public" if self.public else "private" if self.addresses else "loopback"

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
            head, "TensorFlow's gRPC servers listen on every address (0.0.0.0, [::]) with no "
            f"authentication: while a cluster runs, {who} can connect to its ports and run "
            "code as you.", todo,
            "(MXNet's ps-lite listens on 127.0.0.1 here: only this machine can reach it.)"]
        lines = [line for text in paragraphs for line in textwrap.wrap(text, 92)]
        width = max(len(line) for line in lines)
        return "\n".join(["=" * width, *lines, "=" * width])


def machine_addresses(interfaces: dict[str, list[Any]] | None = None) -> tuple[Address, ...]:
    """This machine's addresses others could use (``psutil.net_if_addrs()``, or
    ``interfaces`` in tests): loopback, link-local, multicast and unspecified left out."""
    found = []
    for interface, entries in sorted((psutil.net_if_addrs() if interfaces is None
                                            else interfaces).items()):
        for entry in entries:
            if entry.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            ip = ipaddress.ip_address(entry.address.split("%", 1)[0])
            if not (ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_unspecified):
                found.append(Address(interface, str(ip), ip.is_global))
    return tuple(found)


def network_exposure(interfaces: dict[str, list[Any]] | None = None) -> NetworkExposure:
    """This machine's reachable addresses, sorted into public and private."""
    return NetworkExposure(machine_addresses(interfaces))


def network_banner() -> NetworkExposure:
    """Print what other machines could reach on this one while a cluster runs; return it.

    For the top of every notebook that starts a cluster; clusters then do not repeat it.
    """
    global _warned
    exposure = network_exposure()
    print(exposure.banner())
    _warned = True
    return exposure


def check_exposure(allow_external: bool = False, what: str = "this TensorFlow cluster",
                   exposure: NetworkExposure | None = None) -> NetworkExposure:
    """Refuse (:class:`ExposureError`) or warn before starting servers that listen everywhere.

    A public address is refused unless ``allow_external`` or ``$SERIES_ALLOW_EXTERNAL`` is
    ``1``; any other reachable address prints the banner, once per process.
    """
    global _warned
    exposure = exposure if exposure is not None else network_exposure()
    allowed = allow_external or os.environ.get(ENV_VAR, "").strip() == "1"
    if exposure.level == "public" and not allowed:
        raise ExposureError(
            f"{what} was not started: this machine has a public address "
            f"({_listed(exposure.public)}), and TensorFlow's gRPC servers listen on every "
            "address with no authentication, so anyone on the internet who finds a port "
            "could run code as you while the cluster runs. Make the ports unreachable from "
            f"outside first (a firewall that drops incoming connections to ports "
            f"{ephemeral_port_range()}, a private network or VPN, or SSH tunnels), then pass "
            f"allow_external=True or set {ENV_VAR}=1.")
    if exposure.level != "loopback" and not _warned:
        print(exposure.banner())
        _warned = True
    return exposure
