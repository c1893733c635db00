"""GPU pools are detected with torch only where a GPU driver is present: a machine without one
offers the CPU pool without importing torch (~1.5 s on the first look at the compute)."""

from __future__ import annotations

import importlib.machinery
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchgen.core.config import Settings
from benchgen.services.training import compute
from tests.support import python_output


@pytest.fixture(autouse=True)
def fresh_detection() -> Iterator[None]:
    compute._detected_gpus.cache_clear()
    yield
    compute._detected_gpus.cache_clear()


def _fake_torch(monkeypatch: pytest.MonkeyPatch, devices: list[str]) -> None:
    cuda = types.SimpleNamespace(
        is_available=lambda: bool(devices),
        device_count=lambda: len(devices),
        get_device_name=devices.__getitem__,
    )
    torch = types.ModuleType("torch")
    torch.__spec__ = importlib.machinery.ModuleSpec("torch", None)
    torch.cuda = cuda  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)


def test_with_a_driver_torch_names_the_gpus(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    driver = tmp_path / "version"
    driver.write_text("NVRM version: 999")
    monkeypatch.setattr(compute, "GPU_DRIVER_FILES", (str(tmp_path / "absent"), str(driver)))
    _fake_torch(monkeypatch, ["NVIDIA H200", "NVIDIA H200", "NVIDIA A100"])
    offered = compute.offered(Settings(training_cpu_slots=1))
    assert offered == {"cpu": 1, "gpu:NVIDIA H200": 2, "gpu:NVIDIA A100": 1}


def test_without_a_driver_torch_is_not_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(compute, "GPU_DRIVER_FILES", (str(tmp_path / "absent"),))
    _fake_torch(monkeypatch, ["NVIDIA H200"])  # would be found, were torch asked
    assert compute.offered(Settings(training_cpu_slots=2)) == {"cpu": 2}


@pytest.mark.skipif(
    any(Path(name).exists() for name in compute.GPU_DRIVER_FILES), reason="a GPU driver is here"
)
def test_a_machine_without_a_gpu_driver_never_imports_torch_for_its_pools() -> None:
    program = (
        "import sys\nfrom benchgen.core.config import Settings\n"
        "from benchgen.services.training import compute\n"
        "print(compute.offered(Settings(training_cpu_slots=1)), 'torch' in sys.modules)"
    )
    assert python_output(program).split() == ["{'cpu':", "1}", "False"]
