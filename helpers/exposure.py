"""Who could reach a cluster's ports: this machine's addresses, and when to refuse to start.

TensorFlow's gRPC server listens on every address whatever ``TF_CONFIG`` names, with no
authentication: whoever reaches a port can run code as the learner (MXNet's servers,
which unpickle what they are sent, listen on the cluster's host, 127.0.0.1 by default). A
private address is no shield on a cloud VM, whose public address the provider maps onto it.
Where Linux allows it, a ``LocalTFCluster``'s tasks run in a network namespace of their own,
which nothing outside reaches. A TensorFlow cluster without one starts quietly on a
loopback-only machine, with a banner (once) on a private network, and not at all on a public
address unless ``allow_external=True`` or ``SERIES_ALLOW_EXTERNAL=1`` says its ports were made
unreachable from outside.
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
    """This machine's addresses other machines could use: ``1.2.3.4 (eth0)``, ..., and why
    TensorFlow tasks cannot get a network namespace of their own here (``""``: they can)."""

    public: tuple[str, ...]
    private: tuple[str, ...]
    isolation_problem: str = ""

    @property
    def level(self) -> str:
        """``public``, ``private`` or ``loopback`` (no address but the machine's own)."""
        return "public" if self.public else "private" if self.private else "loopback"

    def banner(self) -> str:
        """A few lines: which addresses, what a cluster's ports are exposed to, what to do."""
        problem = self.isolation_problem
        if self.level == "loopback":
            return ("Network: loopback only. No other machine can reach this one, so the "
                    "clusters' ports stay on it" + (f" (TensorFlow tasks get no network "
                    f"namespace of their own: {problem})." if problem else "; TensorFlow tasks "
                    "also run in a network namespace of their own."))
        some = "a cluster" if problem else "such a cluster"
        risk = ("TensorFlow's gRPC servers listen on every address (0.0.0.0, [::]) with no "
                "authentication, " + (f"and here they get no network namespace of their own "
                f"({problem}): " if problem else "so a LocalTFCluster runs its tasks in a network "
                "namespace of their own, which no other machine reaches. A cluster without one "
                "(a task left for this process to play, or isolate=False) says so: ")
                + f"while {some} runs, ")
        protect = (f"drop incoming connections to ports {ephemeral_port_range()} from other "
                   "machines (a firewall), or use a private network, a VPN or SSH tunnels")
        if self.level == "public":
            private = f"; private {', '.join(self.private)}" if self.private else ""
            head = f"Network: PUBLIC address(es) {', '.join(self.public)}{private}."
            risk += "anyone on the internet can connect to its ports and run code as you."
            todo = (f"{protect[0].upper()}{protect[1:]}; then pass allow_external=True to "
                    f"LocalTFCluster or set {ENV_VAR}=1 (until then {some} refuses to start).")
        else:
            head = f"Network: private address(es) {', '.join(self.private)}."
            risk += ("any machine on that network, and on a cloud VM (AWS, GCP, Azure: a private "
                     "address behind the provider's 1:1 NAT) anyone its firewall lets in can "
                     "connect to its ports and run code as you.")
            todo = (f"If you do not trust them, {protect}. Whether this machine has a public "
                    "address behind NAT: `curl -s https://checkip.amazonaws.com` in a terminal.")
        lines = [*textwrap.wrap(head, 92), *textwrap.wrap(risk, 92), *textwrap.wrap(todo, 92),
                 "(MXNet's ps-lite listens on 127.0.0.1 unless LocalMXCluster gets another host.)"]
        width = max(len(line) for line in lines)
        return "\n".join(["=" * width, *lines, "=" * width])


def network_exposure(interfaces: dict[str, list[Any]] | None = None,
                     isolation: str | None = None) -> NetworkExposure:
    """This machine's addresses others could use (``psutil.net_if_addrs()``, or ``interfaces``
    in tests), public (globally routable) or private; loopback and link-local left out; and
    :func:`~helpers.processes.isolation_problem` (or ``isolation`` in tests)."""
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
    network namespace of their own), or print the banner (once per process) before starting
    servers that listen on every address; a TensorFlow cluster left without a namespace
    where the banner says clusters get one says why (``why_not``). ``servers`` says which
    servers and how they listen (MXNet's, on a host the learner chose, get a warning of
    their own each time: the banner describes TensorFlow's)."""
    global _warned
    exposure = exposure if exposure is not None else network_exposure()
    allowed = allow_external or isolated or os.environ.get(ENV_VAR, "").strip() == "1"
    if exposure.level == "public" and not allowed:
        raise ExposureError(
            f"{what} was not started: this machine has a public address "
            f"({', '.join(exposure.public)}), and {servers}"
            f"{f' (here without a network namespace of their own: {why_not})' if why_not else ''}"
            ", so anyone on the internet who "
            "finds a port could run code as you while the cluster runs. Make the ports "
            f"unreachable from outside first (a firewall that drops incoming connections to ports "
            f"{ephemeral_port_range()}, a private network or VPN, or SSH tunnels), then pass "
            f"allow_external=True or set {ENV_VAR}=1.")
    if exposure.level != "loopback" and servers != TF_SERVERS:
        print(f"Warning: {what}: {servers}; any machine that reaches this one "
              f"({', '.join(exposure.public + exposure.private)}) can run code as you while "
              "it runs. Leave host at 127.0.0.1 unless other machines must join.")
    elif exposure.level != "loopback" and not _warned:
        print(exposure.banner())
        _warned = True
    if why_not and exposure.level != "loopback" and not (isolated or exposure.isolation_problem):
        print(f"Note: {what} runs without a network namespace of its own ({why_not}): its "
              "ports are open to other machines while it runs, as the banner says.")
    return exposure
