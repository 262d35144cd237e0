"""The session's ``sources``: sha256 of each user file its functions live in or its plans edit."""

from __future__ import annotations

import os
from collections.abc import Iterable

from tfretrace.fix.core.files import digest as digest_bytes
from tfretrace.fix.core.files import is_user_path, read_source_file, resolve
from tfretrace.records.function_report import FunctionReport


def source_hashes(functions: Iterable[FunctionReport], root: str | os.PathLike[str]) -> tuple[tuple[str, str], ...]:
    """sha256 of every user file a plan edits or a function is defined in, read now from disk."""
    paths: set[str] = set()
    for report in functions:
        paths.add(report.location.rpartition(":")[0])
        for step in report.plan:
            paths.update(str(e.get("path")) for e in step.get("edits") or () if isinstance(e, dict))
    found = []
    for path in sorted(p for p in paths if p and is_user_path(p)):
        disk = resolve(path, root)
        try:
            # The bytes: a file whose line endings or encoding changed is a changed file.
            found.append((path, digest_bytes(read_source_file(disk).data)))
        except (OSError, ValueError):
            continue  # gone, not a regular file or not text: nothing a fix could edit
    return tuple(found)
