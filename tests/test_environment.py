"""The pins that make TensorFlow and MXNet live together must actually hold."""

from importlib import metadata

import pytest
from packaging.specifiers import SpecifierSet

from helpers.environment import MXNET_REQUIREMENTS, REQUIREMENTS, broken_pins, pin_report, read_pins


def test_mxnet_is_1_9_1_not_the_ancient_release_pip_falls_back_to():
    assert metadata.version("mxnet") == "1.9.1", "run `make test` to reinstall the pinned stack"


def test_one_numpy_2_for_every_python_and_mxnet_apart():
    pinned = read_pins()["numpy"]
    assert metadata.version("numpy") == pinned and pinned.startswith("2.")
    assert "mxnet" not in read_pins()  # it cannot resolve beside numpy 2: installed --no-deps
    assert read_pins(MXNET_REQUIREMENTS) == {"mxnet": "1.9.1"}
    for constraints in sorted(REQUIREMENTS.parent.glob("constraints/*py3.1*.txt")):
        if not constraints.name.startswith("site-"):  # the site's builder runs no notebook
            assert f"numpy=={pinned}\n" in constraints.read_text(), constraints.name


def test_every_pin_in_requirements_holds():
    assert broken_pins() == []
    assert len(pin_report()) == len(read_pins()) + 1  # and MXNet's


def test_gpu_requirements_pin_the_same_versions():
    # the default GPU route: TensorFlow's CUDA build, MXNet's CPU wheel, all else the same
    cpu = read_pins(REQUIREMENTS)
    gpu = read_pins(REQUIREMENTS.with_name("requirements-gpu.txt"))
    assert gpu == cpu
    assert "tensorflow[and-cuda]==" in REQUIREMENTS.with_name("requirements-gpu.txt").read_text()


def test_gpu_mxnet_route_pins_mxnets_cuda_build_and_the_cuda_11_libraries():
    from helpers.mxnet_gpu import CUDA_LIBRARIES

    route = read_pins(REQUIREMENTS.with_name("requirements-mxnet-gpu.txt"))
    assert route.pop("mxnet-cu117") == read_pins(MXNET_REQUIREMENTS)["mxnet"]
    assert set(route) == {package for _, package in CUDA_LIBRARIES}  # exactly what MXNet needs
    assert all(name.endswith("-cu11") for name in route)  # never TensorFlow's CUDA 12 family
    assert route["nvidia-cudnn-cu11"].startswith("8.")


def test_import_mxnet_applies_the_numpy_fix_and_runs_an_op():
    from helpers import import_mxnet

    mx = import_mxnet()
    assert mx.__version__ == "1.9.1"
    assert (mx.nd.ones((2, 2)) * 3).asnumpy().sum() == 12


def test_pin_report_flags_a_wrong_version(tmp_path, monkeypatch):
    from helpers import environment

    monkeypatch.setattr(environment, "runtime_packages",
                        lambda: {"numpy": "==2.0.0", "not-a-real-package-xyz": ""})
    req = tmp_path / "requirements.txt"
    req.write_text("# comment\nnumpy==2.0.0\nnot-a-real-package-xyz==1.0\n")
    assert sorted(broken_pins(req)) == [
        "not-a-real-package-xyz: pinned 1.0, installed missing",
        f"numpy: pinned 2.0.0, installed {metadata.version('numpy')}",
    ]


def test_a_platform_numpy_inside_the_runtime_range_is_accepted(tmp_path, monkeypatch):
    from helpers import environment

    installed = metadata.version("numpy")
    req = tmp_path / "requirements.txt"
    req.write_text("numpy==2.0.99\n")
    monkeypatch.setattr(environment, "runtime_packages", lambda: {"numpy": ">=2.0,<3"})
    assert pin_report(req).rows == [["numpy", "2.0.99", installed, "accepted: >=2.0,<3"]]
    assert broken_pins(req) == []
    monkeypatch.setattr(environment, "runtime_packages", lambda: {"numpy": ">=3"})
    assert broken_pins(req) == [f"numpy: pinned 2.0.99, installed {installed}"]


def test_a_missing_requirements_file_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_pins(tmp_path / "missing.txt")


def test_runtime_packages_are_the_notebooks_stack_without_the_tools():
    from helpers.environment import runtime_packages

    runtime = runtime_packages()
    assert {"tensorflow", "mxnet", "numpy", "matplotlib"} <= set(runtime)
    assert not set(runtime) & {"jupyterlab", "nbval", "pytest", "ruff"}
    assert metadata.version("numpy") in SpecifierSet(runtime["numpy"])  # a range, not a pin


def test_missing_tools_are_not_needed_where_only_the_runtime_is_installed(tmp_path,
                                                                           monkeypatch):
    from helpers import environment

    req = tmp_path / "requirements.txt"
    numpy = metadata.version("numpy")
    req.write_text(f"numpy=={numpy}\nsome-maintainer-tool==1.0\nmxnet==9.9\n")
    monkeypatch.setattr(environment, "runtime_packages", lambda: {"numpy": "", "mxnet": ""})
    rows = {r[0]: r[3] for r in pin_report(req).rows}
    assert rows == {"numpy": True, "some-maintainer-tool": environment.NOT_NEEDED,
                    "mxnet": False}
    assert broken_pins(req) == ["mxnet: pinned 9.9, installed 1.9.1"]
    # without the series' metadata every pin counts
    monkeypatch.setattr(environment, "runtime_packages", lambda: {})
    assert "some-maintainer-tool: pinned 1.0, installed missing" in broken_pins(req)
