"""The profile file: a prevention profile as checked JSON, read from untrusted input, written atomically."""

from __future__ import annotations

import json
import os
from typing import Any

from tfretrace._util import checked as C
from tfretrace._util.io import atomic_write_text
from tfretrace._util.text import printable
from tfretrace.records.events import KerasInfo, Leaf
from tfretrace.records.function_key import FunctionKey
from tfretrace.records.session import Session, SessionFormatError, read_document
from tfretrace.runtime.prevent.profile import Entry, Group, Profile

# The marker and version of a profile file; a saved session (no marker) is read as a profile too.
FORMAT = "tfretrace-profile"
VERSION = 1


def load_profile(path: str | os.PathLike[str], *, missing_ok: bool = False) -> Profile:
    """Read a profile file, or a saved session as a profile; SessionFormatError (one line) on a bad file.

    ``missing_ok``: a file that does not exist yet is an empty profile a run will write.
    """
    return read_profile(os.fspath(path), missing_ok=missing_ok)


def read_profile(path: str, *, missing_ok: bool = False) -> Profile:
    """A profile file or a saved session as a Profile; one-line SessionFormatError on bad input.

    Nothing in the file is run: every field is read by a typed reader, a signature only ever
    becomes TensorSpecs and literal Python values (tfretrace._tf.warmup.rebuild).
    """
    if missing_ok and not os.path.lexists(path):
        return Profile(path, (), None, None, learnable=True, runs=0)
    data, source = read_document(path)
    if isinstance(data, dict) and FORMAT in data:
        try:
            return _from_dict(data, path)
        except C.FieldError as exc:
            raise SessionFormatError(f"{source}: malformed tfretrace profile: {exc}") from None
    session = Session.from_dict(data, source)
    if not session.functions:
        raise SessionFormatError(f"{source}: the session records no function to prevent retracing of")
    return Profile.from_session(session, path)


def write_profile(profile: Profile, path: str | None = None) -> str:
    """Write ``profile`` as a profile file (temporary file, then a rename): the old file or the whole new one."""
    target = path if path is not None else profile.path
    atomic_write_text(target, json.dumps(to_dict(profile), indent=1) + "\n")
    return target


def to_dict(profile: Profile) -> dict[str, Any]:
    """The JSON form of a profile file."""
    return {
        FORMAT: VERSION,
        "tensorflow": profile.tensorflow,
        "root": profile.root,
        "runs": profile.runs,
        "functions": [_entry_dict(e) for e in profile.entries],
    }


def _entry_dict(entry: Entry) -> dict[str, Any]:
    return {
        "key": entry.key.to_dict(),
        "name": entry.name,
        "display_name": entry.display_name,
        "location": entry.location,
        "keras": None if entry.keras is None else entry.keras.to_dict(),
        "creates_variables": entry.creates_variables,
        "retraces": entry.retraces,
        "saving_traces": entry.saving_traces,
        "unpreventable": [{"cause": c, "retraces": n, "fix": fix} for c, n, fix in entry.unpreventable],
        "groups": [
            {"params": list(g.params), "signatures": [[leaf.to_dict() for leaf in s] for s in g.recorded]}
            for g in entry.groups
        ],
    }


def _from_dict(data: dict[str, Any], path: str) -> Profile:
    version = data.get(FORMAT)
    if version != VERSION:
        raise C.FieldError(f"{FORMAT} version {printable(repr(version))[:20]} is not {VERSION}")
    entries = C.each(data.get("functions", []), "functions", _entry)
    return Profile(
        path=path,
        entries=entries,
        tensorflow=C.optional_text(data.get("tensorflow"), "tensorflow"),
        root=C.optional_text(data.get("root"), "root"),
        learnable=True,
        runs=C.count(data.get("runs", 1), "runs"),
    )


def _entry(value: Any, where: str) -> Entry:
    data = C.mapping(value, where)
    unpreventable = []
    for i, row in enumerate(C.items(data.get("unpreventable", []), f"{where}.unpreventable")):
        at = f"{where}.unpreventable[{i}]"
        row = C.mapping(row, at)
        unpreventable.append((
            C.text(row.get("cause"), f"{at}.cause"),
            C.count(row.get("retraces"), f"{at}.retraces"),
            C.optional_text(row.get("fix"), f"{at}.fix"),
        ))
    groups = []
    for i, group in enumerate(C.items(data.get("groups", []), f"{where}.groups")):
        at = f"{where}.groups[{i}]"
        group = C.mapping(group, at)
        params = C.texts(group.get("params", []), f"{at}.params")
        signatures = C.each(
            group.get("signatures", []), f"{at}.signatures", lambda s, w: C.each(s, w, Leaf.from_dict)
        )
        groups.append(Group.of(params, tuple(dict.fromkeys(signatures))))
    name = C.text(data.get("name"), f"{where}.name")
    keras = data.get("keras")
    return Entry(
        key=FunctionKey.from_dict(data.get("key"), f"{where}.key"),
        name=name,
        display_name=C.text(data.get("display_name", name), f"{where}.display_name"),
        location=C.text(data.get("location"), f"{where}.location"),
        keras=None if keras is None else KerasInfo.from_dict(keras, f"{where}.keras"),
        groups=tuple(groups),
        unpreventable=tuple(unpreventable),
        creates_variables=C.flag(data.get("creates_variables", False), f"{where}.creates_variables"),
        retraces=C.count(data.get("retraces", 0), f"{where}.retraces"),
        saving_traces=C.count(data.get("saving_traces", 0), f"{where}.saving_traces"),
    )


def merge_files(paths: list[str]) -> Profile:
    """One profile from several profile files or saved sessions (workers, runs): every call of each, folded."""
    merged: Profile | None = None
    for path in paths:
        profile = read_profile(path)
        if merged is None:
            merged = profile
            continue
        merged = merged.merged(profile)
    assert merged is not None
    return merged
