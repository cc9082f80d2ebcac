"""Run a snippet in a fresh Python process.

TensorFlow configures its devices once per process (logical CPUs, placement logging), so
tests of that behaviour cannot share the test runner's process.
"""

import subprocess
import sys
import textwrap


def run_python(code: str, preamble: str = "", timeout: float = 180) -> subprocess.CompletedProcess:
    """Run ``preamble`` then the dedented ``code`` with this interpreter; capture the output."""
    program = textwrap.dedent(preamble) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=timeout)
