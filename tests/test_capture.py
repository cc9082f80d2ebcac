"""Descriptor capture sees what native code writes below Python's sys.stdout."""

import os

import pytest

from helpers.capture import capture_fds


def test_captures_raw_writes_to_both_descriptors():
    with capture_fds((1, 2)) as out:
        os.write(1, b"to stdout\n")
        os.write(2, b"to stderr\n")
    assert out.stdout == "to stdout\n"
    assert out.stderr == "to stderr\n"


def test_descriptors_are_restored_after_an_exception():
    before = os.fstat(1).st_ino
    with pytest.raises(RuntimeError), capture_fds((1,)):
        raise RuntimeError("boom")
    assert os.fstat(1).st_ino == before


def test_only_stdout_and_stderr_can_be_captured():
    with pytest.raises(ValueError, match="descriptors 1 and/or 2"), capture_fds((3,)):
        pass
