"""Descriptor capture sees what native code writes below Python's sys.stdout."""

import logging
import os

import pytest

from helpers.placement import capture_fds, capture_log


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


def test_capture_log_collects_records_and_restores_the_logger():
    logger = logging.getLogger("series-test-capture")
    logger.setLevel(logging.INFO)
    before = list(logger.handlers), logger.propagate
    with capture_log("series-test-capture") as records:
        logger.error("worker %d failed", 1)
        logger.debug("below the logger's level")
    assert [r.getMessage() for r in records] == ["worker 1 failed"]
    assert (list(logger.handlers), logger.propagate) == before


def test_capture_log_restores_the_logger_after_an_exception():
    logger = logging.getLogger("series-test-capture-error")
    with pytest.raises(RuntimeError), capture_log("series-test-capture-error"):
        raise RuntimeError("boom")
    assert logger.propagate and not logger.handlers


@pytest.mark.parametrize("name", ["", None, 3])
def test_capture_log_needs_a_logger_name(name):
    with pytest.raises(ValueError, match="logger name"), capture_log(name):
        pass
