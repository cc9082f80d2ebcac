"""Hosts, ports and listeners: where a local cluster's servers can listen, and who does.

A local cluster needs free ports and a host that is an address of this machine, and it
needs to know who really listens on a port: "something accepts connections there" is
not "our task is ready" (a stranger may have taken the port meanwhile), so
:func:`listening_addresses` reads the kernel's socket tables (psutil) for one process
and :func:`port_holders` names every process listening on a port. The port picker
itself, which must avoid ports other clusters of this process hold, lives with the
process groups in :mod:`helpers.cluster.processes`.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable


def check_host(host: object) -> str:
    """``host`` if it names an address of this machine that a server can bind, else ValueError.

    A local cluster runs every task here, so its host must resolve and be local: an
    unknown name or another machine's address would otherwise fail deep inside the
    framework, or in the port picker.
    """
    if not isinstance(host, str) or not host.strip():
        raise ValueError(f"host must be a host name or address, such as 127.0.0.1, not {host!r}")
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise ValueError(
            f"host {host!r} does not resolve to an address; a local cluster runs on this "
            "machine: leave host at its default, 127.0.0.1"
        ) from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((address[0], 0))
        except OSError:
            shown = host if host == address[0] else f"{host} ({address[0]})"
            raise ValueError(
                f"host {shown!r} is not an address of this machine, so no task could listen "
                "there; a local cluster uses 127.0.0.1 (the default)"
            ) from None
    return host


def port_accepts(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def check_port(port: object, what: str = "a port") -> int:
    """``port`` if it is a TCP port number, else ValueError naming ``what`` it is."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"{what} is an int between 1 and 65535, not {port!r}")
    return port


def ensure_port_free(port: int, host: str = "127.0.0.1") -> None:
    """Raise ValueError, saying what to do, if ``port`` is taken or not a valid port."""
    check_port(port)
    if not port_bindable(port, host):
        raise ValueError(
            f"port {port} on {host} is already in use{holders_note(port)}; pick another "
            "(helpers.cluster.processes.free_port() finds one) or end the process holding it"
        )


def port_bindable(port: int, host: str = "127.0.0.1") -> bool:
    """True when a server could listen on ``port`` now.

    Binds with ``SO_REUSEADDR`` as gRPC does, so connections of a task that was just
    killed (lingering in TIME_WAIT) do not count as "taken"; a live listener does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def format_address(ip: str, port: int) -> str:
    """``127.0.0.1:5000``, ``[::]:5000``."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def listening_addresses(pid: int) -> list[tuple[str, int]]:
    """``(ip, port)`` of every TCP socket that process ``pid`` or its children listen on.

    Read with psutil from the kernel's socket tables, so it names the process that owns
    each listener, not merely "something answers on that port". Empty when the process
    is gone. Call it only for a process that has not been reaped (its pid is ours).
    """
    import psutil  # noqa: PLC0415  (only the listener checks need it)

    try:
        root = psutil.Process(pid)
        family = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    found: set[tuple[str, int]] = set()
    for proc in family:
        try:
            connections = proc.net_connections(kind="tcp")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        found |= {(c.laddr.ip, c.laddr.port) for c in connections
                  if c.status == psutil.CONN_LISTEN}
    return sorted(found)


def port_holders(port: int) -> list[tuple[int | None, str]]:
    """Who listens on ``port`` on this machine: ``(pid, "pid 123 (python -m ...)")`` each.

    A listener of another user's process has no pid here (``None``). Empty when the
    system's socket table cannot be read.
    """
    import psutil  # noqa: PLC0415

    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError):
        return []
    holders: dict[int | None, str] = {}
    for c in connections:
        if c.status != psutil.CONN_LISTEN or c.laddr.port != port:
            continue
        if c.pid is None:
            holders[None] = "another user's process"
            continue
        try:
            command = " ".join(psutil.Process(c.pid).cmdline())[:120]
        except psutil.Error:
            command = "?"
        holders[c.pid] = f"pid {c.pid} ({command})"
    return sorted(holders.items(), key=lambda item: item[1])


def holders_note(port: int, exclude_pids: Iterable[int] = ()) -> str:
    """`` (held by pid 123 (...))`` for messages, or ``""`` when nobody else is seen."""
    skip = set(exclude_pids)
    holders = [text for pid, text in port_holders(port) if pid is None or pid not in skip]
    return f" (held by {', '.join(holders)})" if holders else ""
