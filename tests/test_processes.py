"""Process groups: readiness, failures reported with logs, nothing left running."""

import sys
import time

import psutil
import pytest

from helpers.cluster.processes import (
    ProcessGroup,
    ensure_port_free,
    free_port,
    free_ports,
    port_accepts,
    python_module_command,
)

LISTEN = ("import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', {port})); "
          "s.listen(); print('listening', flush=True); time.sleep(60)")


def test_ready_by_port_then_stopped_quickly():
    port = free_port()
    with ProcessGroup("t") as group:
        proc = group.start("server", [sys.executable, "-c", LISTEN.format(port=port)])
        group.wait_for_port(proc, port, timeout=20)
        group.wait_for_log(proc, "listening", timeout=20)
        pid = proc.pid
    assert group.teardown_seconds < 3
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not port_accepts(port)


def test_process_that_dies_before_ready_is_reported_with_its_log():
    with ProcessGroup("t") as group:
        crash = "print('bad config'); raise SystemExit(3)"
        proc = group.start("crash", [sys.executable, "-c", crash])
        with pytest.raises(RuntimeError, match="exited with code 3") as err:
            group.wait_for_port(proc, free_port(), timeout=20)
    assert "bad config" in str(err.value)


def test_wait_times_out_naming_the_laggard_and_stop_cleans_up():
    with ProcessGroup("t") as group:
        group.start("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
        with pytest.raises(TimeoutError, match="sleeper"):
            group.wait(timeout=0.5)
    assert group.exit_codes()["sleeper"] is not None


def test_a_failed_process_ends_the_wait_early():
    with ProcessGroup("t") as group:
        group.start("ok", [sys.executable, "-c", "import time; time.sleep(30)"])
        group.start("bad", [sys.executable, "-c", "import sys; sys.exit(2)"])
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="bad failed with exit code 2"):
            group.wait(timeout=30)
        assert time.monotonic() - start < 10


def test_kill_injects_a_failure_and_keyboard_interrupt_still_cleans_up():
    with pytest.raises(KeyboardInterrupt), ProcessGroup("t") as group:
        group.start("a", [sys.executable, "-c", "import time; time.sleep(60)"])
        group.start("b", [sys.executable, "-c", "import time; time.sleep(60)"])
        group.kill("a")
        assert group.exit_codes()["a"] == -9
        raise KeyboardInterrupt
    assert all(code is not None for code in group.exit_codes().values())


def test_ports_are_free_and_distinct():
    ports = free_ports(3)
    assert len(set(ports)) == 3
    for port in ports:
        ensure_port_free(port)


def test_port_in_use_is_a_clear_error():
    port = free_port()
    with ProcessGroup("t") as group:
        proc = group.start("holder", [sys.executable, "-c", LISTEN.format(port=port)])
        group.wait_for_port(proc, port, timeout=20)
        with pytest.raises(ValueError, match="already in use"):
            ensure_port_free(port)


@pytest.mark.parametrize("port", [0, 70000, "80", True])
def test_invalid_ports(port):
    with pytest.raises(ValueError, match="between 1 and 65535"):
        ensure_port_free(port)


def test_missing_worker_program_and_bad_calls():
    with pytest.raises(ValueError, match="helpers/workers"):
        python_module_command("helpers.workers.does_not_exist")
    assert python_module_command("json.tool")[1:] == ["-m", "json.tool"]
    with ProcessGroup("t") as group:
        with pytest.raises(ValueError, match="needs a command"):
            group.start("empty", [])
        with pytest.raises(ValueError, match="no process called"):
            group.kill("ghost")
    with pytest.raises(ValueError, match="number of ports"):
        free_ports(0)
