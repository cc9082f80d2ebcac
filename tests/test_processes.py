"""Process groups: readiness, failures reported with logs, nothing left running."""

import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import psutil
import pytest

from helpers.processes import (
    ProcessGroup,
    ensure_port_free,
    free_port,
    free_ports,
    holders_note,
    isolation_problem,
    port_accepts,
    prune_log_folders,
    python_module_command,
    start_network_namespace,
)

LISTEN = ("import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', {port})); "
          "s.listen(); print('listening', flush=True); time.sleep(60)")
NEEDS_NETNS = pytest.mark.skipif(bool(isolation_problem()), reason="this machine gives no "
                                 f"process a network namespace of its own: {isolation_problem()}")


def machine_addresses() -> list[str]:
    """Every address of this machine but link-local ones: where another host would connect."""
    return [a.address for entries in psutil.net_if_addrs().values() for a in entries
            if a.family in (socket.AF_INET, socket.AF_INET6) and not a.address.startswith("fe80")]


def test_ready_by_port_then_stopped_quickly():
    port = free_port()
    with ProcessGroup("t") as group:
        proc = group.start("server", [sys.executable, "-c", LISTEN.format(port=port)])
        group.wait_for_port(proc, port, timeout=20)
        group.wait_until(proc, lambda: "listening" in proc.log(), 20, "printing")
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
        group.start("sleeper", [sys.executable, "-c", "print('zzz', flush=True); "
                                                      "import time; time.sleep(60)"])
        group.wait_until(group.processes["sleeper"], lambda: "zzz" in group.processes[
            "sleeper"].log(), 20, "printing")
        with pytest.raises(TimeoutError, match=r"still running after 0.5 s: sleeper; end of "
                                               r"their logs:\n--- sleeper:\nzzz"):
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


def test_missing_worker_program():
    with pytest.raises(ValueError, match="helpers/workers"):
        python_module_command("helpers.workers.does_not_exist")
    with pytest.raises(ValueError, match="no Python module 'nosuchpackage.x'"):
        python_module_command("nosuchpackage.x")
    assert python_module_command("json.tool")[1:] == ["-m", "json.tool"]


# -- never signal a stranger ---------------------------------------------------------------

def _stranger() -> subprocess.Popen:
    """A process group leader this test owns, outside any ProcessGroup: a stand-in for an
    unrelated process that was given a reaped task's pid."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            start_new_session=True)


def test_stop_never_signals_a_reaped_task_whose_pid_was_reused(monkeypatch):
    stranger = _stranger()
    try:
        with ProcessGroup("t") as group:
            proc = group.start("quick", [sys.executable, "-c", "pass"])
            group.wait(timeout=20)  # reaped: from now on its pid may be anyone's
            assert proc.reaped
            # pid reuse, forced: the kernel gave the reaped task's number to the stranger
            monkeypatch.setattr(proc.popen, "pid", stranger.pid)
            sent = []
            real_killpg = os.killpg
            monkeypatch.setattr(os, "killpg", lambda pid, sig: (sent.append(pid),
                                                                real_killpg(pid, sig)))
            group.start("other", [sys.executable, "-c", "import time; time.sleep(60)"])
            group.kill("quick")  # nothing to kill: it ended long ago
        assert stranger.poll() is None, "stop() killed an unrelated process"
        assert stranger.pid not in sent
        assert group.processes["other"].pid in sent  # the running task was ended
    finally:
        stranger.kill()
        stranger.wait()


def test_a_task_is_reaped_only_after_its_group_is_ended():
    # The task starts a grandchild in its own process group, prints its pid and exits.
    # Collecting the task's status must end the grandchild first (while the group's id
    # is still ours), and never afterwards.
    code = ("import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(60)']); print(p.pid, flush=True)")
    with ProcessGroup("t") as group:
        proc = group.start("parent", [sys.executable, "-c", code])
        group.wait_until(proc, lambda: "\n" in proc.log(), 20, "printing")
        grandchild = int(proc.log().split()[0])
        deadline = time.monotonic() + 20
        while not proc.has_exited() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not proc.reaped and psutil.pid_exists(grandchild)  # a zombie leader keeps its id
        assert proc.returncode == 0  # collecting it ends its group first
        assert _ends_within(grandchild, 5)


def _ends_within(pid: int, seconds: float) -> bool:
    """True once ``pid`` is gone or a zombie (a signal takes a moment to land)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.02)
    return False


# -- how children are started ----------------------------------------------------------------

def test_children_started_from_a_short_lived_thread_outlive_it():
    # The parent-death signal follows the thread that forked: children must not be
    # started from the caller's thread, or they die when it ends.
    with ProcessGroup("t") as group:
        started = []
        worker = threading.Thread(target=lambda: started.append(
            group.start("child", [sys.executable, "-c", "import time; time.sleep(60)"])))
        worker.start()
        worker.join()
        time.sleep(0.5)  # a SIGKILL from the ended thread would have landed by now
        assert started[0].alive
        assert group.exit_codes() == {"child": None}
    assert group.exit_codes()["child"] is not None


def test_children_die_with_the_process_that_started_them():
    # The parent-death signal (Linux), set by the launcher instead of a preexec_fn.
    program = textwrap.dedent("""
        import os, sys, time
        from helpers.processes import ProcessGroup
        group = ProcessGroup("orphans")
        proc = group.start("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
        time.sleep(0.5)
        print(proc.pid, flush=True)
        os._exit(0)  # no clean-up at all: as if the kernel were killed
    """)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            timeout=60)
    child = int(result.stdout.split()[0])
    assert _ends_within(child, 10)


def test_processes_run_the_real_command_in_their_own_session():
    with ProcessGroup("t") as group:
        proc = group.start("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
        deadline = time.monotonic() + 10
        while "time.sleep" not in " ".join(psutil.Process(proc.pid).cmdline()):
            assert time.monotonic() < deadline, "the launcher did not exec the command"
            time.sleep(0.02)
        assert os.getsid(proc.pid) == proc.pid and os.getpgid(proc.pid) == proc.pid
        assert proc.args == [sys.executable, "-c", "import time; time.sleep(60)"]


# -- who listens where -----------------------------------------------------------------------

@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_listening_addresses_name_the_process_and_the_address(host):
    port = free_port()
    code = LISTEN.format(port=port).replace("'127.0.0.1'", repr(host))
    with ProcessGroup("t") as group:
        proc = group.start("server", [sys.executable, "-c", code])
        group.wait_for_port(proc, port, timeout=20)
        assert proc.listening() == [(host, port)]
    assert proc.listening() == []


def test_a_stranger_on_the_port_is_not_readiness():
    port = free_port()
    with socket.socket() as squatter, ProcessGroup("t") as group:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        proc = group.start("late", [sys.executable, "-c", "import time; time.sleep(1)"])
        with pytest.raises(RuntimeError, match="exited with code 0 before listening"):
            group.wait_for_port(proc, port, timeout=20)  # something answers, but not it
        assert f"held by pid {os.getpid()} " in holders_note(port)


# -- ports two clusters of one process might share ----------------------------------------------

def test_a_port_claimed_by_a_running_group_is_refused_and_never_picked(monkeypatch):
    with ProcessGroup("first") as first, ProcessGroup("second") as second:
        first.start("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
        first.claim_ports([40001, 40002], "the first")
        second.claim_ports([40003], "the second")  # no overlap: fine
        with pytest.raises(ValueError, match=r"port 40002 is already used by another cluster "
                                             r"of this process \(first, still running: sleeper\)"):
            second.claim_ports([40002], "the second cluster")
        picks = iter([40001, 40002, 40005])
        monkeypatch.setattr(socket.socket, "getsockname", lambda self: ("127.0.0.1", next(picks)))
        assert free_ports(1) == [40005]
    second.claim_ports([40002], "the second")  # the first has stopped: released


# -- log folders ------------------------------------------------------------------------------

def test_log_folders_of_ended_processes_keep_the_newest(tmp_path):
    ended = [tmp_path / f"cluster-logs-999999999-{100 + i}-tf-cluster-x{i}" for i in range(5)]
    mine = tmp_path / f"cluster-logs-{os.getpid()}-1-tf-cluster-mine"  # still running
    others = [tmp_path / "not-ours", tmp_path / "cluster-logs-odd"]
    for folder in [*ended, mine, *others]:
        folder.mkdir()
    assert sorted(prune_log_folders(tmp_path, keep=2)) == ended[:3]
    assert {p.name for p in tmp_path.iterdir()} == {p.name for p in [*ended[3:], mine, *others]}


def test_a_group_names_its_folder_after_this_process(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with ProcessGroup("good") as good:
        good.start("ok", [sys.executable, "-c", "print('hi')"])
        good.wait(timeout=20)
    assert good.log_dir.parent == tmp_path
    assert good.log_dir.name.startswith(f"cluster-logs-{os.getpid()}-")
    assert (good.log_dir / "ok.log").read_text() == "hi\n"
    with ProcessGroup("given", log_dir=tmp_path / "mine") as given:
        assert given.log_dir == tmp_path / "mine"


def test_children_write_plain_tracebacks_whatever_colour_the_kernel_asks(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")  # what a Jupyter kernel may set
    with ProcessGroup("t") as group:
        proc = group.start("env", [sys.executable, "-c",
                                   "import os; print('colors', os.environ.get('PYTHON_COLORS'))"])
        assert group.wait(["env"], timeout=20) == {"env": 0}
    assert "colors 0" in proc.log(), proc.log()


# -- a network namespace of their own ----------------------------------------------------------

@NEEDS_NETNS
def test_a_server_in_a_network_namespace_serves_inside_and_no_one_outside():
    port = free_port()
    everywhere = LISTEN.format(port=port).replace("socket.socket()", "socket.socket("
                                                  "socket.AF_INET6)").replace("127.0.0.1", "::")
    connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"
    with ProcessGroup("t") as group:
        enter = start_network_namespace(group)
        proc = group.start("server", [*enter, sys.executable, "-c", everywhere])
        group.wait_until(proc, lambda: "listening" in proc.log(), 20, "printing")
        assert proc.listening() == [("::", port)]  # read from its namespace's tables
        reached = [address for address in machine_addresses() if port_accepts(port, address)]
        inside = subprocess.run([*enter, sys.executable, "-c", connect], timeout=30)
        pids = [p.pid for p in group.processes.values()]
    assert "127.0.0.1" in machine_addresses() and reached == [], reached
    assert inside.returncode == 0, "a client inside the namespace should connect"
    assert all(_ends_within(pid, 5) for pid in pids)


@NEEDS_NETNS
def test_a_namespace_and_its_processes_die_with_the_process_that_started_them():
    program = textwrap.dedent("""
        import os, sys, time
        from helpers.processes import ProcessGroup, start_network_namespace
        group = ProcessGroup("orphans")
        enter = start_network_namespace(group)
        group.start("sleeper", [*enter, sys.executable, "-c", "import time; time.sleep(60)"])
        time.sleep(0.5)
        print(*[p.pid for p in group.processes.values()], flush=True)
        os._exit(0)  # no clean-up at all: as if the kernel were killed
    """)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            timeout=60)
    pids = [int(pid) for pid in result.stdout.split()]
    assert len(pids) == 2 and all(_ends_within(pid, 10) for pid in pids), result.stderr
