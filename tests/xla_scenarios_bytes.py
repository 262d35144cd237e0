"""Awkward bytes a program writes to stderr; tfretrace's XLA log tap must pass them on unchanged."""

USER_BYTES = [
    b"plain line from the program\n",
    b"partial without newline",
    b" ... finished\n",
    b"I0000 not a TensorFlow log line at all\n",
    b"progress 1/3\rprogress 2/3\rprogress 3/3\n",
    b"\xff\xfe binary \x00 bytes\n",
    b"W1123 08:00:00.000000   12 other.cc:1] a log-shaped line from the program\n",
]
