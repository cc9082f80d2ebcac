"""Who could reach a cluster's ports: addresses sorted, public machines refused, banners once."""

from __future__ import annotations

import os
import socket
from collections import namedtuple

import pytest
from test_processes import NEEDS_NETNS

from helpers import exposure
from helpers.exposure import (
    ENV_VAR,
    ExposureError,
    check_exposure,
    network_banner,
    network_exposure,
)
from helpers.mx_cluster import LocalMXCluster
from helpers.tf_cluster import LocalTFCluster

Entry = namedtuple("Entry", "family address")
REFUSED = "unshare: unshare failed: Operation not permitted"
LOOPBACK = [Entry(socket.AF_INET, "127.0.0.1"), Entry(socket.AF_INET6, "::1")]
# This CI machine: a documentation-range IPv4 and an IPv6 ULA, plus link-local.
CI_MACHINE = {"lo": LOOPBACK,
              "eth0": [Entry(socket.AF_INET, "192.0.2.2"), Entry(socket.AF_INET6, "fd00::2"),
                       Entry(socket.AF_INET6, "fe80::fc:ff:fe00:1%eth0"),
                       Entry(socket.AF_PACKET, "02:fc:00:00:00:01")]}
CLOUD_VM = {"lo": LOOPBACK,
            "ens5": [Entry(socket.AF_INET, "10.0.3.7"), Entry(socket.AF_INET, "1.2.3.4"),
                     Entry(socket.AF_INET6, "2001:4860:4860::8888")]}


@pytest.fixture(autouse=True)
def fresh_warning(monkeypatch):
    """Each test starts as a fresh process would: no banner printed yet, no opt-in."""
    monkeypatch.setattr(exposure, "_warned", False)
    monkeypatch.delenv(ENV_VAR, raising=False)


def _as(interfaces, monkeypatch):
    real = exposure.network_exposure
    monkeypatch.setattr(exposure, "network_exposure", lambda: real(interfaces))


def test_loopback_and_link_local_addresses_are_left_out():
    found = network_exposure(CI_MACHINE)
    assert found.private == ("192.0.2.2 (eth0)", "fd00::2 (eth0)") and found.public == ()
    assert network_exposure({"lo": LOOPBACK}).level == "loopback"


def test_this_kind_of_machine_counts_as_private():
    assert network_exposure(CI_MACHINE).level == "private"
    carrier_nat = {"wg0": [Entry(socket.AF_INET, "100.64.0.9")]}
    assert network_exposure(carrier_nat).level == "private"  # not routable from the internet


def test_a_globally_routable_address_counts_as_public():
    found = network_exposure(CLOUD_VM)
    assert found.level == "public"
    assert found.public == ("1.2.3.4 (ens5)", "2001:4860:4860::8888 (ens5)")
    assert found.private == ("10.0.3.7 (ens5)",)


def test_a_public_machine_refuses_unless_allowed(capsys):
    public = network_exposure(CLOUD_VM)
    with pytest.raises(ExposureError) as info:
        check_exposure(False, "this LocalTFCluster", public)
    message = str(info.value)
    assert message.startswith("this LocalTFCluster was not started: this machine has a public "
                              "address (1.2.3.4 (ens5), 2001:4860:4860::8888 (ens5))")
    for what_to_do in ("firewall", "SSH tunnels", "allow_external=True", f"{ENV_VAR}=1"):
        assert what_to_do in message
    assert "\n" not in message  # one paragraph
    assert check_exposure(True, exposure=public) is public
    assert "PUBLIC address(es) 1.2.3.4 (ens5)" in capsys.readouterr().out


def test_the_environment_variable_allows_it_too(monkeypatch):
    public = network_exposure(CLOUD_VM)
    monkeypatch.setenv(ENV_VAR, "yes")  # only "1" counts
    with pytest.raises(ExposureError):
        check_exposure(exposure=public)
    monkeypatch.setenv(ENV_VAR, "1")
    assert check_exposure(exposure=public).level == "public"


def test_a_private_machine_warns_once_per_process(capsys):
    private = network_exposure(CI_MACHINE)
    check_exposure(exposure=private)
    first = capsys.readouterr().out
    assert "private address(es) 192.0.2.2 (eth0), fd00::2 (eth0)" in first
    assert "no authentication" in first and "firewall" in first
    check_exposure(exposure=private)
    assert capsys.readouterr().out == ""


def test_a_loopback_only_machine_says_nothing(capsys):
    check_exposure(exposure=network_exposure({"lo": LOOPBACK}))
    assert capsys.readouterr().out == ""


def test_network_banner_prints_the_machines_exposure(monkeypatch, capsys):
    import psutil

    monkeypatch.setattr(psutil, "net_if_addrs", lambda: CI_MACHINE)
    found = network_banner()
    shown = capsys.readouterr().out
    assert found.level == "private" and "192.0.2.2" in shown
    assert f"ports {exposure.ephemeral_port_range()}" in shown
    assert shown.splitlines()[0] == "=" * len(shown.splitlines()[0])
    check_exposure()  # a cluster starting after the banner does not repeat it
    assert capsys.readouterr().out == ""
    monkeypatch.setattr(psutil, "net_if_addrs", lambda: {"lo": LOOPBACK})
    network_banner()
    assert "loopback only" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_allow_external_must_be_a_bool(value):
    with pytest.raises(ValueError, match="allow_external must be one of False, True"):
        LocalTFCluster("json.tool", workers=1, allow_external=value)


def test_a_tensorflow_cluster_on_a_public_machine_is_refused_before_anything_runs(
        monkeypatch, tmp_path):
    _as(CLOUD_VM, monkeypatch)
    cluster = LocalTFCluster("json.tool", workers=1, log_dir=tmp_path, isolate=False)
    with cluster, pytest.raises(ExposureError, match=(
            "LocalTFCluster was not started: .*no authentication "
            r"\(here outside a network namespace: isolate=False\)")):
        cluster.start()
    assert cluster.group.processes == {} and cluster.netns.processes == {}


@NEEDS_NETNS
def test_in_a_network_namespace_of_its_own_it_starts_on_a_public_machine(
        monkeypatch, fake_listener):
    module, env = fake_listener
    _as(CLOUD_VM, monkeypatch)
    with LocalTFCluster(module, workers=1, env=env) as cluster:
        cluster.start()  # no allow_external needed: no other machine reaches it
        port = cluster.port("worker-0")
        assert cluster.table().column("listening on") == [
            f"0.0.0.0:{port} (every address of its own network namespace)"]


def test_the_banner_says_whether_clusters_get_a_namespace_and_why_not():
    for machine in (CI_MACHINE, CLOUD_VM):
        isolated = " ".join(network_exposure(machine, isolation="").banner().split())
        assert ("so a LocalTFCluster runs its tasks in a network namespace of their own, which "
                "nothing outside reaches (or says why it cannot): while a cluster without one "
                "runs, ") in isolated
        refused = " ".join(network_exposure(machine, isolation=REFUSED).banner().split())
        assert f"get no network namespace of their own here ({REFUSED}): while a" in refused
    assert "cloud VM" in network_exposure(CI_MACHINE, isolation=REFUSED).banner()
    assert network_exposure({"lo": LOOPBACK}, isolation="").banner().endswith(
        "a LocalTFCluster runs its tasks in a network namespace of their own, which nothing "
        "outside reaches (or says why it cannot).")
    assert REFUSED in network_exposure({"lo": LOOPBACK}, isolation=REFUSED).banner()


def test_a_cluster_without_a_namespace_where_others_get_one_says_why(capsys):
    why = "a reason of the caller's"
    check_exposure(exposure=network_exposure(CI_MACHINE, isolation=""), why_not=why)
    assert " ".join(capsys.readouterr().out.split("=")[-1].split()) == (
        f"Note: this TensorFlow cluster runs without a network namespace of its own ({why}): "
        "its ports are open to other machines while it runs, as the banner says.")
    check_exposure(exposure=network_exposure(CI_MACHINE, isolation=""), isolated=True)
    check_exposure(exposure=network_exposure(CI_MACHINE, isolation=REFUSED), why_not=REFUSED)
    check_exposure(exposure=network_exposure({"lo": LOOPBACK}, isolation=""), why_not=why)
    assert capsys.readouterr().out == ""  # isolated; the banner said so; nothing reaches it


@pytest.fixture
def fake_listener(tmp_path, monkeypatch):
    """A module ``listener`` that listens on every address on its TF_CONFIG port."""
    (tmp_path / "listener.py").write_text(
        "import json, os, socket, time\n"
        "c = json.loads(os.environ['TF_CONFIG'])\n"
        "port = int(c['cluster']['worker'][0].rsplit(':', 1)[1])\n"
        "s = socket.socket(); s.bind(('0.0.0.0', port)); s.listen(); time.sleep(60)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "listener", {"PYTHONPATH": os.pathsep.join([str(tmp_path),
                                                       os.environ.get("PYTHONPATH", "")])}


def test_allowed_it_starts_and_shows_where_it_listens(monkeypatch, fake_listener, capsys):
    _as(CLOUD_VM, monkeypatch)
    module, env = fake_listener
    with LocalTFCluster(module, workers=1, env=env, allow_external=True,
                        isolate=False) as cluster:
        cluster.start()
        port = cluster.port("worker-0")
        assert cluster.table().column("listening on") == [f"0.0.0.0:{port} (every address)"]
    assert "PUBLIC address(es)" in capsys.readouterr().out


def test_an_mxnet_cluster_on_a_reachable_host_follows_the_same_rule(monkeypatch):
    found = network_exposure()
    reachable = [a.split()[0] for a in found.public + found.private if "." in a.split()[0]]
    if not reachable:
        pytest.skip("this machine has no IPv4 address besides loopback")
    cluster = LocalMXCluster("helpers.workers.mx_pushpull", host=reachable[0])
    _as(CLOUD_VM, monkeypatch)
    with cluster, pytest.raises(ExposureError, match=r"LocalMXCluster \(host "):
        cluster.start()
    assert cluster.group.processes == {}
