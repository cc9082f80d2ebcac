"""Read TensorFlow device strings, short or fully qualified, into their parts.

TensorFlow accepts several spellings of the same device: ``/cpu:0``, ``CPU:0``,
``/device:CPU:0`` and ``/job:localhost/replica:0/task:0/device:CPU:0``. The long form
names the device's place in a cluster (job, replica, task) as well as its type and
index; logs always print the long form. :func:`parse_device` accepts every spelling and
rejects anything else with a message that shows the accepted forms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KNOWN_TYPES = ("CPU", "GPU", "TPU")

_FORMS = (
    "'/cpu:0', '/gpu:1', 'GPU:0', '/device:GPU:0' or "
    "'/job:worker/replica:0/task:1/device:CPU:0'"
)
_PART = re.compile(r"^(job|replica|task|device):(.+)$")
_TYPE_INDEX = re.compile(r"^([A-Za-z_]+):(\d+)$")


@dataclass(frozen=True)
class DeviceName:
    """A device string taken apart: where in the cluster, what kind, which one."""

    device_type: str
    index: int
    job: str | None = None
    replica: int | None = None
    task: int | None = None

    @property
    def short(self) -> str:
        """The short form, e.g. ``/GPU:1``."""
        return f"/{self.device_type}:{self.index}"

    @property
    def full(self) -> str:
        """The fully qualified form TensorFlow logs, defaulting to a local process."""
        job = self.job or "localhost"
        return (
            f"/job:{job}/replica:{self.replica or 0}/task:{self.task or 0}"
            f"/device:{self.device_type}:{self.index}"
        )


def _bad(spec: str, why: str) -> ValueError:
    return ValueError(f"{spec!r} is not a device string ({why}); use a form like {_FORMS}")


def _type_and_index(spec: str, text: str) -> tuple[str, int]:
    match = _TYPE_INDEX.match(text)
    if not match:
        raise _bad(spec, f"expected TYPE:INDEX, got {text!r}")
    device_type = match.group(1).upper()
    if device_type not in KNOWN_TYPES:
        raise _bad(spec, f"unknown device type {match.group(1)!r}, known: {', '.join(KNOWN_TYPES)}")
    return device_type, int(match.group(2))


def parse_device(spec: str) -> DeviceName:
    """Parse any TensorFlow device spelling; raise ValueError with the accepted forms."""
    if not isinstance(spec, str) or not spec.strip():
        raise _bad(str(spec), "it is empty")
    text = spec.strip()
    if not text.startswith("/"):
        device_type, index = _type_and_index(spec, text)
        return DeviceName(device_type, index)
    parts: dict[str, str] = {}
    pieces = text[1:].split("/")
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        part = _PART.match(piece)
        if part is None:
            if len(pieces) == 1:  # '/cpu:0'
                device_type, index = _type_and_index(spec, piece)
                return DeviceName(device_type, index)
            raise _bad(spec, f"unknown part {piece!r}")
        key, value = part.groups()
        if key in parts:
            raise _bad(spec, f"{key!r} appears twice")
        parts[key] = value
        i += 1
    if "device" not in parts:
        raise _bad(spec, "it names no device")
    device_type, index = _type_and_index(spec, parts["device"])
    numbers = {}
    for key in ("replica", "task"):
        if key in parts:
            if not parts[key].isdigit():
                raise _bad(spec, f"{key} must be a number, got {parts[key]!r}")
            numbers[key] = int(parts[key])
    return DeviceName(
        device_type, index, parts.get("job"), numbers.get("replica"), numbers.get("task")
    )
