"""Who could reach a cluster's ports: this machine's addresses, and when to refuse to start.

TensorFlow's gRPC server listens on every address whatever ``TF_CONFIG`` names, with no
authentication: whoever reaches a port can run code as the learner (MXNet's servers,
which unpickle what they are sent, listen on the cluster's host, 127.0.0.1 by default). A
private address is no shield on a cloud VM, whose public address the provider maps onto it.
So a TensorFlow cluster runs in a network namespace of its own where Linux allows it; one
without starts quietly on a loopback-only machine, with a banner (once) on a private network,
and not at all on a public address unless ``allow_external=True`` or
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

from helpers.processes import isolation_problem

#: Set to 1 to let a TensorFlow cluster start on a machine with a public address.
ENV_VAR = "SERIES_ALLOW_EXTERNAL"
_warned = False


class ExposureError(RuntimeError):
    """A cluster would listen, unauthenticated, on an address the internet can reach."""


def ephemeral_port_range() -> str:
    """``32768-60999``: where the OS (and so the series) picks free ports, read from Linux."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return f"{int(low)}-{int(high)}"
    except (OSError, ValueError):
        return "in the ephemeral range"


@dataclass(frozen=True)
class NetworkExposure:
    """Addresses other machines could use (``1.2.3.4 (eth0)``, ...); why tasks get no
    network namespace here (``""``: they do)."""

    public: tuple[str, ...]
    private: tuple[str, ...]
    isolation_problem: str = ""

    #: ``public``, ``private`` or ``loopback`` (no address but the machine's own).
    level = property(lambda self: "public" if self.public else "private" if self.private
                     else "loopback")

    def banner(self) -> str:
        """A few lines: which addresses, what a cluster's ports are exposed to, what to do."""
        namespace = (f"TensorFlow tasks get no network namespace of their own here "
                     f"({self.isolation_problem})" if self.isolation_problem else "a "
                     "LocalTFCluster runs its tasks in a network namespace of their own, which "
                     "nothing outside reaches (or says why it cannot)")
        if self.level == "loopback":
            return ("Network: loopback only. No other machine can reach this one, so the "
                    f"clusters' ports stay on it; {namespace}.")
        protect = (f"drop incoming connections to ports {ephemeral_port_range()} from other "
                   "machines (a firewall), or use a private network, a VPN or SSH tunnels")
        if self.level == "public":
            private = f"; private {', '.join(self.private)}" if self.private else ""
            head = f"Network: PUBLIC address(es) {', '.join(self.public)}{private}."
            who = "anyone on the internet"
            todo = (f"{protect[0].upper()}{protect[1:]}; then pass allow_external=True to "
                    f"LocalTFCluster or set {ENV_VAR}=1 (until then it refuses to start).")
        else:
            head = f"Network: private address(es) {', '.join(self.private)}."
            who = ("any machine on that network, and on a cloud VM (AWS, GCP, Azure: a private "
                   "address behind the provider's 1:1 NAT) anyone its firewall lets in")
            todo = (f"If you do not trust them, {protect}. Whether this machine has a public "
                    "address behind NAT: `curl -s https://checkip.amazonaws.com` in a terminal.")
        lines = textwrap.wrap(head, 92) + textwrap.wrap(
            "TensorFlow's gRPC servers listen on every address (0.0.0.0, [::]) with no "
            f"authentication, {'and' if self.isolation_problem else 'so'} {namespace}: while a "
            f"cluster without one runs, {who} can connect to its ports and run code as you.",
            92) + textwrap.wrap(todo, 92) + [
            "(MXNet's ps-lite listens on 127.0.0.1 unless LocalMXCluster gets another host.)"]
        width = max(len(line) for line in lines)
        return "\n".join(["=" * width, *lines, "=" * width])


def network_exposure(interfaces: dict[str, list[Any]] | None = None,
                     isolation: str | None = None) -> NetworkExposure:
    """This machine's addresses others could use (``psutil.net_if_addrs()``, or ``interfaces``
    in tests), public (globally routable) or private, loopback and link-local left out, and
    ``isolation_problem()`` (or ``isolation``)."""
    found: dict[bool, list[str]] = {True: [], False: []}
    for interface, entries in sorted((psutil.net_if_addrs() if interfaces is None
                                      else interfaces).items()):
        for entry in entries:
            if entry.family in (socket.AF_INET, socket.AF_INET6):
                ip = ipaddress.ip_address(entry.address.split("%", 1)[0])
                if not (ip.is_loopback or ip.is_link_local or ip.is_multicast
                        or ip.is_unspecified):
                    found[ip.is_global].append(f"{ip} ({interface})")
    return NetworkExposure(tuple(found[True]), tuple(found[False]),
                           isolation_problem() if isolation is None else isolation)


def network_banner() -> NetworkExposure:
    """Print what other machines could reach here while a cluster runs (clusters then do
    not repeat it); return it."""
    global _warned
    exposure = network_exposure()
    print(exposure.banner())
    _warned = True
    return exposure


TF_SERVERS = "TensorFlow's gRPC servers listen on every address with no authentication"


def check_exposure(allow_external: bool = False, what: str = "this TensorFlow cluster",
                   exposure: NetworkExposure | None = None, servers: str = TF_SERVERS,
                   isolated: bool = False, why_not: str = "") -> NetworkExposure:
    """Refuse (:class:`ExposureError`) a public address unless allowed or ``isolated`` (in a
    network namespace), or print the banner (once per process), and ``why_not`` a cluster
    has no namespace where others get one. ``servers`` says which servers and how they
    listen (MXNet's, on a host the learner chose, get a warning of their own each time)."""
    global _warned
    exposure = exposure if exposure is not None else network_exposure()
    allowed = allow_external or isolated or os.environ.get(ENV_VAR, "").strip() == "1"
    if exposure.level == "public" and not allowed:
        raise ExposureError(
            f"{what} was not started: this machine has a public address "
            f"({', '.join(exposure.public)}), and {servers}"
            f"{f' (here outside a network namespace: {why_not})' if why_not else ''}, so anyone "
            "on the internet who finds a port could run code as you while the cluster runs. "
            "Make the ports unreachable from outside first (a firewall that drops incoming "
            f"connections to ports {ephemeral_port_range()}, a private network or VPN, or SSH "
            f"tunnels), then pass allow_external=True or set {ENV_VAR}=1.")
    if exposure.level != "loopback" and servers != TF_SERVERS:
        print(f"Warning: {what}: {servers}; any machine that reaches this one "
              f"({', '.join(exposure.public + exposure.private)}) can run code as you while "
              "it runs. Leave host at 127.0.0.1 unless other machines must join.")
    elif exposure.level != "loopback" and not _warned:
        print(exposure.banner())
        _warned = True
    if why_not and exposure.level != "loopback" and not (isolated or exposure.isolation_problem):
        print(textwrap.fill(f"Note: {what} runs without a network namespace of its own "
                            f"({why_not}): its ports are open to other machines while it runs, "
                            "as the banner says.", 92))
    return exposure
