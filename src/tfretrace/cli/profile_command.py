"""``tfretrace profile``: prevention profiles merged from several workers' or runs' files, and shown."""

from __future__ import annotations

import argparse
import os
from typing import TextIO

from tfretrace.cli.output import UsageError, checked_output

EXIT_OK = 0


def configure(profile: argparse.ArgumentParser) -> None:
    """The ``profile`` subcommand's description and its ``merge`` and ``show`` actions (help: app.SUMMARIES)."""
    profile.description = (
        "A profile (tfretrace run --prevent PROFILE.json) keeps, per function, the calls "
        "runs met; merging folds several into one, only ever wider."
    )
    actions = profile.add_subparsers(dest="action", metavar="ACTION")
    merge = actions.add_parser("merge", help="fold profile files or saved sessions into one profile file")
    merge.add_argument("files", nargs="+", metavar="FILE.json")
    merge.add_argument("-o", "--output", required=True, metavar="PROFILE.json", help="the profile file to write")
    show = actions.add_parser("show", help="list a profile's functions and what a run would warm")
    show.add_argument("file", metavar="PROFILE.json")


def command_profile(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``profile merge`` or ``profile show``; a bad file is a one-line error (exit 2)."""
    from tfretrace.runtime.prevent.profile_file import merge_files, read_profile, write_profile

    if ns.action == "merge":
        target = checked_output(ns.output, "-o", check_format=False)
        merged = merge_files(list(ns.files))
        try:
            write_profile(merged, os.fspath(target.path))
        except OSError as exc:
            raise UsageError(f"-o {ns.output!r}: {exc.strerror or exc}", hint=False) from None
        signatures = sum(len(g.recorded) for e in merged.entries for g in e.groups)
        print(f"tfretrace: wrote {ns.output} ({len(merged.entries)} function(s), {signatures} call signature(s), "
              f"{merged.runs} run(s))", file=err)
        return EXIT_OK
    if ns.action == "show":
        profile = read_profile(ns.file)
        for entry in profile.entries:
            warm = sum(len(g.warm) for g in entry.groups)
            calls = sum(len(g.recorded) for g in entry.groups)
            print(f"{entry.display_name} ({entry.location}) key {entry.key.describe()}#{entry.key.code_hash}: "
                  f"{calls} call signature(s), {warm} to warm", file=out)
        return EXIT_OK
    raise UsageError("profile needs an action: merge or show")
