"""TensorFlow's native log lines written while tfretrace runs traces on made inputs stay off stderr, the rest kept."""

from __future__ import annotations

import os

import pytest

from tfretrace._tf.native_log import native_log_held, others

WARNING = (
    b"W0000 00:00:1795932555.840044    3647 local_rendezvous.cc:412] Local rendezvous is aborting with status: "
    b"INVALID_ARGUMENT: indices[0,0] = -2147483448 is not in [0, 200)\n"
    b"\t [[{{node sequential_1/embedding_1/GatherV2}}]]\n"
)


def test_native_lines_and_their_continuations_are_dropped_and_the_rest_kept() -> None:
    data = b"before\n" + WARNING + b"\tthe program's own tabbed line\n" + WARNING + b"after"
    # A tabbed line after a native one (or its continuation) is taken as continuing it: dropped too.
    assert others(data) == b"before\nafter"
    assert others(b"I said W0000 00:00:00 in the middle\n") == b"I said W0000 00:00:00 in the middle\n"


def test_descriptor_two_is_held_and_what_is_not_tensorflow_s_comes_back(capfd: pytest.CaptureFixture[str]) -> None:
    with native_log_held():
        os.write(2, b"kept 1\n" + WARNING + b"kept 2\n")
    os.write(2, WARNING)  # outside the block: TensorFlow's line passes as written
    assert capfd.readouterr().err == "kept 1\nkept 2\n" + WARNING.decode()
