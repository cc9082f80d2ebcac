"""GPU scenario matrix: 0, 1, 2, 4 and 8 cards of T4, L4, A100, H100 and H200, without a GPU.

Discovery is faked where the helpers ask (TensorFlow's physical devices and device
details, nvidia-smi, MXNet's own GPU count, the MXNet GPU route's verdict); everything
above it is the series' real code: the device plan, its banner, the virtual GPUs and
their memory caps, memory growth, MXNet's contexts, the environment of each worker
process and the gpu profile's sizes. One H200 answers with the nvidia-smi outputs recorded on
a real one (``gpu_reference/``).
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import subprocess
import sys

import pytest
from gpu_fakes import (
    ALL_CARDS,
    FakeMX,
    FakeTF,
    fake_nvidia_smi,
    mig_uuid,
    recorded,
    recorded_nvidia_smi,
)

from helpers import devices, frameworks
from helpers.devices import reserve_mb
from helpers.mxnet_gpu import MXNetRoute, runs_mxnet_kernels
from helpers.profiles import PROFILES, device_memory_mb, get_profile, matpow_gpu_mb
from helpers.tf_cluster import gpu_task_env

SCENARIOS = [("none", 0)] + [(card, n) for card in ALL_CARDS for n in (1, 2, 4, 8)]
IDS = [f"gpu-{n}x{card}" for card, n in SCENARIOS]
CPU_WHEEL = MXNetRoute("cpu", "not-installed")


def gpu_route(card: str, gpus: int) -> MXNetRoute:
    """What the MXNet GPU route's probe concludes on ``gpus`` cards of this kind."""
    if runs_mxnet_kernels(ALL_CARDS[card][2]):
        return MXNetRoute("gpu", "ok", side_dir=".mxnet-gpu", gpus=gpus)
    return MXNetRoute("cpu", "no-kernel-image", side_dir=".mxnet-gpu",
                      cards=((ALL_CARDS[card][0], ALL_CARDS[card][2]),))


@pytest.fixture(autouse=True)
def jit_cache_home(monkeypatch, tmp_path):
    """The CUDA JIT cache an H100 scenario sets up goes under ``tmp_path``; its variables
    are undone after each test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for var in ("CUDA_CACHE_PATH", "CUDA_CACHE_MAXSIZE"):
        monkeypatch.setenv(var, "")  # so that monkeypatch restores the original state ...
        monkeypatch.delenv(var)  # ... after the code under test has set it
    return tmp_path / "pdl-series" / "cuda"


def machine(monkeypatch, card: str, gpus: int, route: MXNetRoute = CPU_WHEEL) -> FakeTF:
    """Make this process see ``gpus`` cards of kind ``card`` (none for ``gpus=0``)."""
    card = card if card in ALL_CARDS else "T4"
    tf = FakeTF(gpus, card)
    monkeypatch.setattr(devices, "import_tensorflow", lambda **_kw: tf)
    monkeypatch.setattr(shutil, "which",
                        lambda exe: f"/usr/bin/{exe}" if gpus else None)
    monkeypatch.setattr(subprocess, "run", fake_nvidia_smi(card, gpus))
    monkeypatch.setattr(devices, "mxnet_route", lambda: route)
    monkeypatch.setattr(devices, "cpu_cores", lambda: 8)
    monkeypatch.delenv(devices.GROWTH_ENV, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return tf


def card_of(tf: FakeTF, name: str) -> int:
    """The physical card a TensorFlow virtual GPU name lives on (TF numbers card by card)."""
    index, start = int(name.rsplit(":", 1)[1]), 0
    for card in range(tf.config.gpus):
        count = len(tf.config.logical.get(f"/physical_device:GPU:{card}") or [None])
        if index < start + count:
            return card
        start += count
    raise AssertionError(f"{name} is beyond the configured devices")


@pytest.mark.parametrize("needed", [1, 2, 4, 8])
@pytest.mark.parametrize(("card", "gpus"), SCENARIOS, ids=IDS)
def test_gpu_plan_banner_and_memory(monkeypatch, card, gpus, needed):
    tf = machine(monkeypatch, card, gpus)
    plan = devices.plan_devices(needed)
    banner = plan.banner()
    assert len(plan.devices) == len(set(plan.devices)) == needed
    if gpus == 0:
        assert plan.kind == "logical-cpu" and plan.devices[0] == "/CPU:0"
        assert f"This lesson needs {needed} device(s); this machine has 0 GPU(s) and 8 CPU " \
               "core(s)." in banner
        assert "MXNet" not in banner and "MiB" not in banner  # the CPU banner is unchanged
        assert devices.GROWTH_ENV not in os.environ
        return
    name, card_mb, capability = ALL_CARDS[card]
    assert f"{gpus} GPU(s) ({name} ({card_mb / 1024:.0f} GiB, compute capability " \
           f"{capability[0]}.{capability[1]}))" in banner
    assert "MXNet: CPU wheel" in banner  # every GPU banner says where MXNet runs
    assert os.environ[devices.GROWTH_ENV] == "true"  # inherited by children
    if gpus >= needed:
        assert plan.kind == "gpu" and not plan.simulated
        assert plan.devices == tuple(f"/GPU:{i}" for i in range(needed))
        assert plan.distinct_cards(needed) == needed
        assert all(tf.config.growth[d.name] for d in tf.config.list_physical_devices("GPU"))
        assert not tf.config.logical  # no virtual GPUs, no caps: growth decides
        assert f"using {needed} real GPU(s)" in banner and "memory growth on" in banner
        assert "SIMULATED" not in banner
        return
    assert plan.kind == "virtual-gpu" and plan.simulated and "SIMULATED" in banner
    per_card = math.ceil(needed / gpus)
    counts = [len(tf.config.logical[f"/physical_device:GPU:{c}"]) for c in range(gpus)]
    assert sum(counts) == needed and max(counts) == per_card and min(counts) >= 1
    # interleaved: the plan's order alternates cards, as the banner and `cards` say
    assert [card_of(tf, d) for d in plan.devices] == list(plan.cards)
    assert plan.distinct_cards(gpus) == gpus
    assert list(plan.cards[:gpus]) == list(range(gpus))
    # memory: every virtual GPU is capped, and the caps fit the card with its reserve
    limits = {c.memory_limit for configs in tf.config.logical.values() for c in configs}
    assert limits == {plan.memory.per_device_mb}
    assert per_card * plan.memory.per_device_mb + reserve_mb(card_mb) <= card_mb
    assert plan.memory.per_device_mb >= 1024  # no fixed 1 GiB: a share of the real card
    assert f"up to {plan.memory.per_device_mb} MiB of its card's {card_mb} MiB" in banner
    if gpus == 1:
        assert "carved out of 1 physical GPU(s)" in banner and "adds no compute" in banner
    else:
        assert f"The first {gpus} are on different cards" in banner
        assert f"{plan.devices[1]} (card 1)" in banner


@pytest.mark.parametrize("card", list(ALL_CARDS), ids=[f"gpu-{c}" for c in ALL_CARDS])
def test_gpu_lesson_memory_need_is_given_when_it_fits_and_warned_when_not(monkeypatch, card):
    tf = machine(monkeypatch, card, 1)
    size = get_profile("gpu").matpow_size  # notebook 04's need, from the fitted profile
    need = device_memory_mb(size, chains=3)
    plan = devices.plan_devices(2, gpu_memory_mb=need)
    assert plan.memory.fits and plan.memory.per_device_mb == need
    assert {c.memory_limit for c in tf.config.logical["/physical_device:GPU:0"]} == {need}
    assert "WARNING" not in plan.banner()
    tf = machine(monkeypatch, card, 1)
    greedy = devices.plan_devices(2, gpu_memory_mb=ALL_CARDS[card][1])  # a whole card each
    assert greedy.memory.fits is False and greedy.memory.per_device_mb < ALL_CARDS[card][1] // 2
    assert "WARNING: the lesson needs" in greedy.banner() and "smaller profile" in greedy.banner()


@pytest.mark.parametrize(("card", "gpus"), SCENARIOS, ids=IDS)
def test_gpu_mxnet_contexts_come_from_mxnets_own_count(monkeypatch, card, gpus):
    routes = [CPU_WHEEL] + ([gpu_route(card, gpus)] if gpus else [])
    for route in routes:
        mx = FakeMX(route.gpus if route.on_gpu else 0)  # MXNet counts its own GPUs
        for needed in (1, 2, 4):
            machine(monkeypatch, card, gpus, route)
            plan = devices.plan_devices(needed)
            contexts = plan.mxnet_contexts(mx)
            text = plan.describe_mxnet_contexts(mx)
            assert len(contexts) == len(set(contexts)) == needed  # never one context twice
            if mx.num_gpus() >= needed:
                assert [str(c) for c in contexts] == [f"gpu({i})" for i in range(needed)]
                assert "SIMULATED" not in text
            else:  # TensorFlow's GPUs do not count: MXNet has fewer than the lesson needs
                assert all(c.device_type == "cpu" for c in contexts)
                assert ("SIMULATED" in text) == (needed > 1)
                assert ("no GPU" if mx.num_gpus() == 0 else f"only {mx.num_gpus()} GPU(s)") in text
            if gpus:
                assert route.summary() in plan.banner()


@pytest.mark.parametrize(("card", "gpus"), SCENARIOS, ids=IDS)
def test_gpu_worker_processes_get_their_own_card_and_memory_growth(monkeypatch, card, gpus):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    env = gpu_task_env(gpus, chief=1)
    tasks = [("chief", 0)] + [("worker", i) for i in range(3)]
    if gpus == 0:
        assert all(env(t, i) == {} for t, i in tasks + [("ps", 0)])
        return
    seen = [env(t, i)["CUDA_VISIBLE_DEVICES"] for t, i in tasks]
    assert seen == [str(p % gpus) for p in range(4)]  # round robin, one card each if enough
    assert all(env(t, i)["TF_FORCE_GPU_ALLOW_GROWTH"] == "true" for t, i in tasks)
    assert env("ps", 0) == {"CUDA_VISIBLE_DEVICES": ""}  # parameter servers hold no GPU
    # a scheduler (SLURM) or the user gave this job cards 4, 5, ...: workers stay on them
    given = ",".join(str(4 + i) for i in range(gpus))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", given)
    env = gpu_task_env(gpus)
    assert [env("worker", i)["CUDA_VISIBLE_DEVICES"] for i in range(3)] == \
        [given.split(",")[i % gpus] for i in range(3)]


@pytest.mark.parametrize("mxnet_on_gpu", [False, True], ids=["gpu-mxnet-cpu", "gpu-mxnet-gpu"])
@pytest.mark.parametrize(("card", "gpus"), [s for s in SCENARIOS if s[1] in (1, 2)],
                         ids=[i for i, s in zip(IDS, SCENARIOS, strict=True) if s[1] in (1, 2)])
def test_gpu_profile_fits_the_smallest_card(monkeypatch, card, gpus, mxnet_on_gpu):
    machine(monkeypatch, card, gpus)
    route = MXNetRoute("gpu", "ok", gpus=gpus) if mxnet_on_gpu else CPU_WHEEL
    monkeypatch.setattr("helpers.frameworks.mxnet_route", lambda: route)
    profile = get_profile("gpu")
    card_mb = ALL_CARDS[card][1]
    assert matpow_gpu_mb(profile.matpow_size, gpus, mxnet_on_gpu) <= card_mb - reserve_mb(card_mb)
    seed = PROFILES["gpu"].matpow_size
    if matpow_gpu_mb(seed, gpus, mxnet_on_gpu) <= card_mb - reserve_mb(card_mb):
        assert profile.matpow_size == seed == 10_000  # the seed's size wherever it fits
    else:
        assert profile.matpow_size < seed and "does not fit" in profile.description
    if card == "T4" and gpus == 1:  # a 16 GB T4: the seed's size only while MXNet is on the CPU
        assert profile.matpow_size == (9000 if mxnet_on_gpu else 10_000)


def test_gpu_profile_without_a_driver_keeps_the_seed_sizes(monkeypatch):
    machine(monkeypatch, "none", 0)
    assert get_profile("gpu") == PROFILES["gpu"]


def test_gpu_cards_follow_cuda_visible_devices(monkeypatch):
    machine(monkeypatch, "A100-80GB", 2)  # TensorFlow sees 2 of the driver's 4 cards ...
    monkeypatch.setattr(subprocess, "run", fake_nvidia_smi("A100-80GB", 4, extra_mb=1))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")  # ... the driver's 3 and 1, in that order
    cards = devices.gpu_cards()
    assert [(c.index, c.name, c.memory_mb, c.capability) for c in cards] == [
        (0, "NVIDIA A100-SXM4-80GB", 81923, (8, 0)), (1, "NVIDIA A100-SXM4-80GB", 81921, (8, 0))]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-00000002,GPU-00000000")  # UUID prefixes
    assert [c.memory_mb for c in devices.gpu_cards()] == [81922, 81920]


def test_gpu_runtime_started_without_growth_is_explained(monkeypatch):
    tf = machine(monkeypatch, "T4", 2)
    tf.config.started = True  # a TensorFlow op ran before the banner
    with pytest.raises(RuntimeError, match="without memory growth.*restart the kernel"):
        devices.plan_devices(2)


def test_gpu_virtual_devices_after_start_are_explained(monkeypatch):
    tf = machine(monkeypatch, "L4", 1)
    tf.config.started = True
    with pytest.raises(RuntimeError, match="already started.*restart the kernel"):
        devices.plan_devices(4)


# --- H100 and H200: TensorFlow 2.21 ships PTX only for compute capability 9.0 ------------


@pytest.mark.parametrize("card", list(ALL_CARDS), ids=[f"gpu-{c}" for c in ALL_CARDS])
def test_gpu_jit_cache_is_shared_only_where_tensorflow_has_no_sass(monkeypatch, card,
                                                                     jit_cache_home):
    machine(monkeypatch, card, 2)
    banner = devices.plan_devices(2).banner()
    name = ALL_CARDS[card][0]
    if ALL_CARDS[card][2] < (9, 0):  # T4 7.5 runs sm_70, L4 sm_89, A100 sm_80: no JIT
        assert "JIT" not in banner and "CUDA_CACHE_PATH" not in os.environ
        assert "CUDA_CACHE_MAXSIZE" not in os.environ and not jit_cache_home.exists()
        return
    assert f"{name} (sm_90): TensorFlow 2.21.0 ships PTX only for it, so the first run is " \
           f"slow: it JIT-compiles kernels into {jit_cache_home} (minutes, once;" in banner
    assert os.environ["CUDA_CACHE_PATH"] == str(jit_cache_home) and jit_cache_home.is_dir()
    assert os.environ["CUDA_CACHE_MAXSIZE"] == str(4 * 2**30)  # the documented maximum


def test_gpu_jit_cache_keeps_a_cache_the_user_chose(monkeypatch, tmp_path):
    machine(monkeypatch, "H100", 1)
    monkeypatch.setenv("CUDA_CACHE_PATH", str(tmp_path / "mine"))
    monkeypatch.setenv("CUDA_CACHE_MAXSIZE", "1073741824")
    assert f"into {tmp_path / 'mine'} (minutes" in devices.plan_devices(1).banner()
    assert os.environ["CUDA_CACHE_MAXSIZE"] == "1073741824"


def test_gpu_jit_cache_is_set_before_cuda_starts(monkeypatch, jit_cache_home):
    """import_tensorflow sets it before TensorFlow's first look for GPUs (where CUDA starts),
    so the kernel's own process uses the cache its workers will inherit."""
    tf = machine(monkeypatch, "H100", 1)
    seen, listing = [], tf.config.list_physical_devices
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: (
        seen.append(os.environ.get("CUDA_CACHE_PATH")), listing(kind))[1])
    tf.get_logger = lambda: logging.getLogger("fake-tensorflow")
    monkeypatch.setitem(sys.modules, "tensorflow", tf)
    assert frameworks.import_tensorflow() is tf
    assert seen == [str(jit_cache_home)]


# --- MIG: the slice's memory, not the card's -------------------------------------------------


def test_gpu_mig_a100_in_seven_slices_sizes_everything_from_one_slice(monkeypatch):
    tf = machine(monkeypatch, "A100-80GB", 1)  # CUDA enumerates one MIG slice per process
    monkeypatch.setattr(subprocess, "run",
                        fake_nvidia_smi("A100-80GB", 1, mig=("1g.10gb",) * 7))
    slice_mb = 10 * 10**9 // 2**20  # 9536 MiB, where memory.total says 81920
    for visible in (None, mig_uuid(0, 4)):
        if visible:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        [card] = devices.gpu_cards()
        assert (card.name, card.memory_mb) == ("NVIDIA A100-SXM4-80GB MIG 1g.10gb", slice_mb)
    plan = devices.plan_devices(2)
    assert plan.memory.card_mb == slice_mb
    assert 2 * plan.memory.per_device_mb + reserve_mb(slice_mb) <= slice_mb
    assert {c.memory_limit for c in tf.config.logical["/physical_device:GPU:0"]} == \
        {plan.memory.per_device_mb}
    assert f"of its card's {slice_mb} MiB" in plan.banner() and "MIG 1g.10gb" in plan.banner()
    profile = get_profile("gpu")  # 10^4 does not fit a 10 GB slice; 8000 does
    assert profile.matpow_size == 8000 and f"does not fit {slice_mb} MiB" in profile.description
    assert matpow_gpu_mb(8000, 1, False) <= slice_mb - reserve_mb(slice_mb)
    assert gpu_task_env(1)("worker", 0)["CUDA_VISIBLE_DEVICES"] == mig_uuid(0, 4)


def test_gpu_mig_h100_slices_of_different_sizes(monkeypatch, jit_cache_home):
    machine(monkeypatch, "H100", 1)  # 3g.40gb + 2g.20gb + 2 x 1g.10gb: all 8 memory slices
    monkeypatch.setattr(subprocess, "run", fake_nvidia_smi(
        "H100", 1, mig=("3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb")))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", mig_uuid(0, 0))
    [card] = devices.gpu_cards()
    assert (card.name, card.memory_mb) == ("NVIDIA H100 80GB HBM3 MIG 3g.40gb", 38146)
    assert get_profile("gpu").matpow_size == 10_000  # the seed's size fits 40 GB
    banner = devices.plan_devices(2).banner()
    assert "of its card's 38146 MiB" in banner and "(sm_90)" in banner  # still an H100
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", mig_uuid(0, 2)[:12])  # a UUID prefix
    assert devices.gpu_cards()[0].memory_mb == 9536


# --- One real H200, as its nvidia-smi answered (gpu_reference/) -----------------------------


def test_gpu_h200_recording_is_one_card_throughout():
    """The recorded answers agree with one another: the query's line is the card that ``-L``,
    ``-q`` and the plain table describe, and the fake answers from that line."""
    index, uuid, name, total, used, _util, cap = recorded("H200", "query").strip().split(", ")
    assert recorded("H200", "L").strip() == f"GPU {index}: {name} (UUID: {uuid})"
    report = recorded("H200", "q")
    for key, value in (("Attached GPUs", "1"), ("Product Name", name), ("GPU UUID", uuid),
                       ("MIG Mode\n        Current", "Disabled"), ("Total", total)):
        assert re.search(rf"{key} +: {value}\n", report), f"-q should say {key}: {value}"
    assert f"{total.replace(' ', '')} " in recorded("H200", "") and name in recorded("H200", "")
    assert (name, int(total.split()[0]), tuple(map(int, cap.split(".")))) == ALL_CARDS["H200"]
    answer = recorded_nvidia_smi("H200")(["nvidia-smi", "--query-gpu=compute_cap,memory.used,name",
                                          "--format=csv,noheader"])
    assert answer.stdout == f"{cap}, {used}, {name}\n"


def test_gpu_h200_recorded_answers_read_as_on_the_real_card(monkeypatch):
    """What the series' nvidia-smi readers gave on the real H200 (h200-helpers.txt), and what
    TensorFlow 2.21 would add: the card, its memory, the JIT line (only PTX for sm_90)."""
    from helpers.machine import describe_machine

    machine(monkeypatch, "H200", 1)
    assert describe_machine()["gpus"] == ["NVIDIA H200 (143771 MiB)"]
    assert devices._smi_rows() == [
        ["0", "GPU-090b5001-509d-9192-081b-2b610a294b4c", "NVIDIA H200", "143771 MiB"]]
    assert devices.nvidia_smi().rows == [["0", "NVIDIA H200", "143771 MiB", "0 MiB", "0 %"]]
    assert devices.gpu_cards() == (devices.GPUCard(0, "NVIDIA H200", 143771, (9, 0)),)
    banner = devices.plan_devices(2).banner()
    assert "1 GPU(s) (NVIDIA H200 (140 GiB, compute capability 9.0))" in banner
    assert "NVIDIA H200 (sm_90): TensorFlow 2.21.0 ships PTX only for it" in banner
    assert get_profile("gpu").matpow_size == 10_000  # the seed's size fits 140 GiB
