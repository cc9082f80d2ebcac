"""Hosts on links of a chosen speed: what a network does to a step, on one machine.

Over loopback, bandwidth is a memory copy, so only latency ever shows. Here each host is a
network namespace with one interface (``eth0``) and an address of its own (10.77.0.1, ...),
cabled by a veth pair to a bridge (the switch) in one more namespace. A token-bucket filter
(``tc``'s ``tbf``) on both ends of every cable lets ``rate`` through each way, as a network
card of that speed would, so a task's traffic to any other host crosses two shaped links.
Nothing outside reaches these addresses, and :meth:`ShapedNetwork.stop` (or the group's
exit) ends the holders, which takes every namespace, cable and filter with them.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys

from helpers.processes import NAMESPACE_PROGRAM, ProcessGroup, isolation_problem, unshare_command

#: A rate as ``tc`` writes it: ``100mbit``, ``1gbit``, ``500kbit``.
RATE = re.compile(r"^(\d+(?:\.\d+)?)(kbit|mbit|gbit)$")
_SCALE = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}

# Run inside a host: `python -c _RECEIVE ADDRESS PORT` prints "listening", then the seconds
# from the first chunk's arrival to the last byte and the bytes after that first chunk (which
# may have waited in a buffer: counting it would overstate the rate); `_SEND` sends them.
_RECEIVE = """import socket, sys, time
s = socket.socket(); s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1)
print("listening", flush=True)
c, n = s.accept()[0], 0
c.recv(1 << 20); t = time.perf_counter(); data = c.recv(1 << 20)
while data:
    n += len(data); data = c.recv(1 << 20)
print(time.perf_counter() - t, n)"""
_SEND = """import socket, sys
with socket.create_connection((sys.argv[1], int(sys.argv[2]))) as s:
    s.sendall(bytes(int(sys.argv[3])))"""


def bits_per_second(rate: str) -> float:
    """``"100mbit"`` -> 1e8. ValueError naming the form for anything else."""
    match = RATE.match(str(rate).strip().lower()) if isinstance(rate, str) else None
    if not match or float(match[1]) <= 0:
        raise ValueError(f"rate {rate!r} is not a link speed: write a number and kbit, mbit "
                         "or gbit (bits per second), as '100mbit' or '1gbit'")
    return float(match[1]) * _SCALE[match[2]]


@functools.cache
def shaping_problem() -> str:
    """Why hosts on shaped links cannot be had here ("" when they can): no ``ip`` or ``tc``
    command, no network namespaces, or a kernel or container that refuses veth or tbf.
    Found by building a two-host network once per process."""
    if missing := [tool for tool in ("ip", "tc") if shutil.which(tool) is None]:
        return f"no {' or '.join(missing)} command (Debian's iproute2 package has both)"
    if problem := isolation_problem():
        return f"no network namespaces ({problem})"
    try:
        with ShapedNetwork(2, "1gbit"):
            return ""
    except (OSError, RuntimeError, TimeoutError, subprocess.SubprocessError) as err:
        return str(err).splitlines()[0]


class ShapedNetwork(ProcessGroup):
    """``hosts`` hosts (``enter(i)`` runs a command on host ``i``, at ``address(i)``), each
    link shaped to ``rate`` each way. A context manager; start() builds it."""

    def __init__(self, hosts: int, rate: str = "1gbit", subnet: str = "10.77.0") -> None:
        if not (isinstance(hosts, int) and 2 <= hosts <= 64):
            raise ValueError(f"hosts={hosts!r}: a shaped network joins 2 to 64 hosts")
        self.hosts, self.rate, self.subnet = hosts, rate, subnet
        self.bits_per_second = bits_per_second(rate)
        # tbf's bucket, whose bytes pass at once after a pause: 1 ms of traffic, two frames at
        # least (one must fit: tbf drops a larger packet, but cuts a GSO one into frames). A
        # larger bucket lets short messages through at loopback speed; a smaller one loses
        # tokens whenever the kernel's timers fire late, as on a busy or shared machine
        self.burst = max(2 * 1514, int(self.bits_per_second / 8000))
        super().__init__("shaped-network")

    def __enter__(self) -> ShapedNetwork:
        self.start_network()
        return self

    def address(self, host: int) -> str:
        return f"{self.subnet}.{host + 1}"

    def _nsenter(self, name: str, net: bool = True) -> list[str]:
        user = ["--user", "--preserve-credentials"] if os.geteuid() else []
        return ["nsenter", f"--target={self.processes[name].pid}", *user,
                *(["--net"] if net else []), "--"]

    def enter(self, host: int) -> list[str]:
        """The prefix that runs a command on ``host`` (``nsenter`` execs it: same pid)."""
        return self._nsenter(f"host-{host}")

    def _run(self, *command: str) -> None:
        done = subprocess.run([*self._nsenter("switch"), *command], capture_output=True,
                              text=True, timeout=30)
        if done.returncode:
            raise RuntimeError(f"`{' '.join(command)}` failed: {done.stderr.strip()}")

    def start_network(self) -> None:
        """Build the switch and the hosts, cable and shape them; on any failure end it all."""
        holder = [sys.executable, "-I", "-S", "-c", NAMESPACE_PROGRAM, "up"]
        try:
            self._ready(self.start("switch", [*unshare_command(), *holder]))
            self._run("ip", "link", "add", "br0", "type", "bridge")
            self._run("ip", "link", "set", "br0", "up")
            for host in range(self.hosts):  # a namespace below the switch's user namespace
                proc = self.start(f"host-{host}", [*self._nsenter("switch", net=False),
                                                   "unshare", "--net", *holder])
                self._ready(proc)
                self._run("ip", "link", "add", f"v{host}", "type", "veth", "peer", "name",
                          "eth0", "netns", str(proc.pid))
                self._run("ip", "link", "set", f"v{host}", "master", "br0", "up")
                inside = ["nsenter", f"--net=/proc/{proc.pid}/ns/net", "--"]
                for where, device in (([], f"v{host}"), (inside, "eth0")):
                    self._run(*where, "tc", "qdisc", "add", "dev", device, "root", "tbf", "rate",
                              f"{self.bits_per_second:.0f}bit", "burst", str(self.burst),
                              "latency", "100ms")
                self._run(*inside, "ip", "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
                self._run(*inside, "ip", "link", "set", "eth0", "up")
        except BaseException:
            self.stop()
            raise

    def _ready(self, proc: object) -> None:
        self.wait_until(proc, lambda: "ready" in proc.log(), 10, "ready")  # type: ignore

    def measure(self, seconds: float = 0.5, src: int = 1, dst: int = 0) -> float:
        """Bits per second from host ``src`` to ``dst``, as a program there sees them: a
        transfer of about ``seconds`` at the set rate, timed by the receiver. Both ends are
        processes of this group: they end with it, or with this process."""
        nbytes = max(1 << 16, int(self.bits_per_second / 8 * seconds))
        ends = {"receiver": [*self.enter(dst), sys.executable, "-c", _RECEIVE, self.address(dst)],
                "sender": [*self.enter(src), sys.executable, "-c", _SEND, self.address(dst)]}
        try:
            receiver = self.start("receiver", [*ends["receiver"], "5999"])
            self.wait_until(receiver, lambda: "listening" in receiver.log(), 30, "listening")
            self.start("sender", [*ends["sender"], "5999", str(nbytes)])
            self.wait(["sender", "receiver"], timeout=60 + 20 * seconds)
            took, got = receiver.log().split()[-2:]
        finally:
            for name in ("sender", "receiver"):
                if name in self.processes and self.processes[name].alive:
                    self.kill(name)
        return 8 * int(got) / float(took)

    def __repr__(self) -> str:
        return f"ShapedNetwork({self.hosts} hosts, {self.rate} each way, {self.subnet}.0/24)"

