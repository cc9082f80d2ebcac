"""The pins that make TensorFlow and MXNet live together must actually hold."""

from importlib import metadata

import pytest

from helpers.environment import REQUIREMENTS, broken_pins, pin_report, read_pins


def test_mxnet_is_1_9_1_not_the_ancient_release_pip_falls_back_to():
    assert metadata.version("mxnet") == "1.9.1", "run `make test` to reinstall the pinned stack"


def test_numpy_is_the_one_version_both_frameworks_accept():
    assert metadata.version("numpy") == "1.26.4"
    assert read_pins()["numpy"] == "1.26.4"


def test_every_pin_in_requirements_holds():
    assert broken_pins() == []
    assert len(pin_report()) == len(read_pins())


def test_gpu_requirements_pin_the_same_versions():
    cpu = read_pins(REQUIREMENTS)
    gpu = read_pins(REQUIREMENTS.with_name("requirements-gpu.txt"))
    assert gpu.pop("mxnet-cu117") == cpu.pop("mxnet")
    assert gpu == cpu


def test_import_mxnet_applies_the_numpy_fix_and_runs_an_op():
    from helpers import import_mxnet

    mx = import_mxnet()
    assert mx.__version__ == "1.9.1"
    assert (mx.nd.ones((2, 2)) * 3).asnumpy().sum() == 12


def test_pin_report_flags_a_wrong_version(tmp_path, monkeypatch):
    from helpers import environment

    monkeypatch.setattr(environment, "runtime_packages",
                        lambda: {"numpy", "not-a-real-package-xyz"})
    req = tmp_path / "requirements.txt"
    req.write_text("# comment\nnumpy==2.0.0\nnot-a-real-package-xyz==1.0\n")
    assert sorted(broken_pins(req)) == [
        "not-a-real-package-xyz: pinned 1.0, installed missing",
        "numpy: pinned 2.0.0, installed 1.26.4",
    ]


def test_requirements_without_pins_or_missing_file_are_errors(tmp_path):
    empty = tmp_path / "r.txt"
    empty.write_text("tensorflow\n")
    with pytest.raises(ValueError, match="no `name==version`"):
        read_pins(empty)
    with pytest.raises(FileNotFoundError):
        read_pins(tmp_path / "missing.txt")


def test_runtime_packages_are_the_notebooks_stack_without_the_tools():
    from helpers.environment import runtime_packages

    runtime = runtime_packages()
    assert {"tensorflow", "mxnet", "numpy", "matplotlib"} <= runtime
    assert not runtime & {"jupyterlab", "nbval", "pytest", "ruff"}


def test_missing_tools_are_not_needed_where_only_the_runtime_is_installed(tmp_path,
                                                                           monkeypatch):
    from helpers import environment

    req = tmp_path / "requirements.txt"
    req.write_text("numpy==1.26.4\nsome-maintainer-tool==1.0\nmxnet==9.9\n")
    monkeypatch.setattr(environment, "runtime_packages", lambda: {"numpy", "mxnet"})
    rows = {r[0]: r[3] for r in pin_report(req).rows}
    assert rows == {"numpy": True, "some-maintainer-tool": environment.NOT_NEEDED,
                    "mxnet": False}
    assert broken_pins(req) == ["mxnet: pinned 9.9, installed 1.9.1"]
    # without the series' metadata every pin counts
    monkeypatch.setattr(environment, "runtime_packages", lambda: set())
    assert "some-maintainer-tool: pinned 1.0, installed missing" in broken_pins(req)
