"""Profiles: chosen by name, by environment or by hardware; bad names rejected."""

import dataclasses

import pytest

from helpers.profiles import PROFILES, Profile, device_memory_mb, get_profile, shrink

#: The profiles whose arithmetic the notebooks rely on: the three, and the gpu profile shrunk
#: the way `make run PROFILE=gpu SHRINK=16` runs its code paths on a CPU.
CHECKED = {**PROFILES, "gpu/16": shrink(PROFILES["gpu"], 16)}


def test_every_profile_fills_every_field_with_positive_sizes():
    for profile in PROFILES.values():
        for field in dataclasses.fields(Profile):
            value = getattr(profile, field.name)
            if isinstance(value, (int, float)):
                assert value > 0, (profile.name, field.name)
            if isinstance(value, tuple):
                assert value and all(v > 0 for v in value), (profile.name, field.name)


def test_timed_epochs_split_into_whole_steps_for_every_replica_count():
    for profile in CHECKED.values():
        for k in profile.replica_counts:
            global_batch = profile.batch_per_replica * k
            assert profile.timed_examples % global_batch == 0, (profile.name, k)
            assert profile.train_examples % global_batch == 0, (profile.name, k)


def test_gpu_profile_uses_the_seeds_full_sizes():
    gpu = PROFILES["gpu"]
    assert (gpu.matpow_size, gpu.matpow_n, gpu.image_size) == (10000, 10, 150)
    assert PROFILES["ci"].matpow_size < gpu.matpow_size


def test_environment_variable_chooses_and_argument_wins(monkeypatch):
    monkeypatch.setenv("SERIES_PROFILE", "laptop")
    assert get_profile().name == "laptop"
    assert get_profile("ci").name == "ci"


def test_overrides_replace_single_fields():
    profile = get_profile("ci", matpow_n=3)
    assert profile.matpow_n == 3 and profile.matpow_size == PROFILES["ci"].matpow_size


def test_unknown_profile_name_lists_the_choices(monkeypatch):
    monkeypatch.delenv("SERIES_PROFILE", raising=False)
    with pytest.raises(ValueError, match="ci, laptop, gpu"):
        get_profile("huge")


def test_unknown_profile_in_environment_says_where_it_came_from(monkeypatch):
    monkeypatch.setenv("SERIES_PROFILE", "tiny")
    with pytest.raises(ValueError, match=r"\$SERIES_PROFILE"):
        get_profile()


def test_unknown_override_field_is_rejected():
    with pytest.raises(ValueError, match="unknown profile field"):
        get_profile("ci", matrix_size=5)


def test_device_memory_grows_with_size_and_chains():
    assert device_memory_mb(10_000) > 1024  # more than a default 1 GiB virtual GPU
    assert device_memory_mb(1024, chains=2) == 2 * device_memory_mb(1024, chains=1) == 40


@pytest.mark.parametrize("name", CHECKED)
def test_every_profile_keeps_the_arithmetic_the_notebooks_rely_on(name):
    """Claims whose truth depends on sizes, checked for every profile's sizes (the ``gpu``
    profile never runs in CI): a failure here names the notebook whose claim would break."""
    p = CHECKED[name]
    small, blas = max(min(p.matpow_size, 1024) // 8, 16), min(p.matpow_size, 1024)
    assert small < blas, "04: exercise 2's product must be smaller than section 7's"
    for k in p.replica_counts:  # 05: the steps alone are an epoch minus a one-step fit
        assert p.timed_examples // (p.batch_per_replica * k) >= 2, f"05: {k} replicas"
    assert 5000 * 50 > 10 * p.cluster_steps * 32, "08: the source saw more images than a run"
    assert p.pipeline_microbatches[0] == 1 and all(  # 13: equal micro-batches, m = 1 first
        p.pipeline_batch % m == 0 for m in p.pipeline_microbatches), "13: micro-batches"
    assert {1, 2} <= set(p.collective_workers), "11: one worker and a pair are timed"


def test_shrinking_divides_amounts_and_sides_and_keeps_every_count():
    gpu, small = PROFILES["gpu"], shrink(PROFILES["gpu"], 16)
    assert small.train_examples == gpu.train_examples // 16
    assert (small.matpow_size, small.image_size) == (gpu.matpow_size // 4, gpu.image_size // 4)
    counts = ("replica_counts", "pipeline_microbatches", "collective_workers", "repeat",
              "fusion_tensors", "matpow_n", "epochs", "cluster_steps", "scaling_workers",
              "micro_batches")
    assert all(getattr(small, f) == getattr(gpu, f) for f in counts)
    assert len(set(small.message_sizes_kb)) == len(small.message_sizes_kb)  # floors meet once
    assert "shrunk 16x" in small.description and shrink(gpu, 1) is gpu


def test_bad_input_shrink_from_the_environment_names_the_choices(monkeypatch):
    monkeypatch.setenv("SERIES_SHRINK", "half")
    with pytest.raises(ValueError, match=r"\$SERIES_SHRINK must be 1, 4, 16 or 64, not 'half'"):
        get_profile("gpu")
    monkeypatch.setenv("SERIES_SHRINK", "4")
    assert get_profile("gpu").image_size == PROFILES["gpu"].image_size // 2
