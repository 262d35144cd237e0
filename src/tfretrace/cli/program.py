"""Running the user's program as ``python`` would: argv, sys.path, streams, threads, exit status.

What ``tfretrace run`` needs around runpy, so that the program cannot tell it is monitored and
its failures look as they would without tfretrace (no tfretrace or runpy frames).
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import io
import os
import runpy
import sys
import threading
import traceback
import types
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from tfretrace._tf.programs import remember_program
from tfretrace._util.tracebacks import PACKAGE_DIR, unlink_frames

EXIT_OK = 0
# --fail-on-retrace uses the status linters use for "found something"; the program's own
# non-zero status always wins, so a crash is never reported as "only" a retrace.
EXIT_RETRACED = 1
EXIT_USAGE = 2  # bad input: one line, as argparse's own status for it


@dataclass(frozen=True)
class Target:
    """What ``run`` executes: a script path or a module name, and the argv after it."""

    script: str | None
    module: str | None
    args: tuple[str, ...]


def runnable(script: Path) -> bool:
    """A file python can run, or a folder (or zip) with a __main__.py, as ``python PATH`` takes."""
    return script.is_file() or (script / "__main__.py").is_file()


def is_notebook(script: str) -> bool:
    """A Jupyter notebook: ``run`` executes its code cells instead of the file."""
    return script.lower().endswith(".ipynb")


def find_module(name: str) -> object | None:
    """The module's spec, looked up from the working directory like ``python -m`` does."""
    saved = sys.path[0] if sys.path else None
    _set_path0(os.getcwd())
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    finally:
        if saved is not None:
            _set_path0(saved)


def execute(target: Target) -> int:
    """Run the target as ``python`` would: same argv, ``__main__``, sys.path[0] and status."""
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    streams = (sys.stdout, sys.stderr)
    _freeze_own_objects()
    try:
        if target.module is not None:
            sys.argv = [target.module, *target.args]  # run_module puts the file path here
            _set_path0(os.getcwd())
            remember_program(runpy.run_module(target.module, run_name="__main__", alter_sys=True))
        else:
            assert target.script is not None
            sys.argv = [target.script, *target.args]
            script = Path(target.script).resolve()
            # python puts a script's folder first on sys.path, or the folder it runs itself.
            _set_path0(str(script if script.is_dir() else script.parent))
            if is_notebook(target.script):
                from tfretrace.cli.notebook_run import run_notebook  # a notebook's cells: loaded for one

                run_notebook(target.script)
            elif script.is_file() and script.suffix != ".pyc" and not zipfile.is_zipfile(script):
                _run_file(target.script)
            else:  # a folder or zip with __main__.py: runpy finds it, its __file__ is absolute
                remember_program(runpy.run_path(target.script, run_name="__main__"))
        return EXIT_OK
    except SystemExit as exc:
        _restore_streams(streams)
        return exit_status(exc.code)
    except KeyboardInterrupt as exc:
        _restore_streams(streams)
        _print_user_traceback(exc)
        return 130
    except BaseException as exc:
        _restore_streams(streams)
        _print_user_traceback(exc)
        return 1
    finally:
        _restore_streams(streams)
        sys.argv = saved_argv
        if saved_path0 is not None:
            _set_path0(saved_path0)


def _freeze_own_objects() -> None:
    """Leave what is alive before the program's first line (tfretrace's modules) out of the cyclic GC.

    They live as long as the process, yet every full collection walks them again, and importing
    TensorFlow makes many: measured by bench/startup.py, that walk cost about 90 ms of CPU of the
    TensorFlow import (`import tensorflow` after tfretrace's modules, with and without gc.freeze()).
    Python's own objects of that moment are frozen too, as they are under ``gc.freeze()`` in any
    program; what the program allocates is collected as under python. A program that froze
    something itself is left as it is.
    """
    if gc.isenabled() and gc.get_freeze_count() == 0:
        gc.freeze()


def _run_file(script: str) -> None:
    """Run a script file as ``__main__`` the way ``python script.py`` does.

    Not runpy.run_path: it gives ``__file__`` and ``sys.argv[0]`` the same value, where python
    keeps argv[0] as typed and makes ``__file__`` (and the code's file name) absolute, without
    resolving links: the current folder joined to the path.
    """
    path = script if os.path.isabs(script) else os.path.join(os.getcwd(), script)
    with io.open_code(path) as file:
        source = file.read()
    code = compile(source, path, "exec", dont_inherit=True)  # bytes: coding cookie and BOM honoured
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __cached__=None, __loader__=None, __package__=None, __spec__=None)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        # The planner traces the program's module-level tf.functions afresh once it has run
        # (tfretrace._tf.probe): python would drop this module now.
        remember_program(main.__dict__)
        if saved is not None:
            sys.modules["__main__"] = saved


def wait_for_threads() -> None:
    """Wait for the program's non-daemon threads, as python does before it exits.

    A program whose training loop runs in such a thread is still tracing when its main code
    returns; stopping the monitor then would lose every trace.
    """
    me = threading.current_thread()
    try:
        while True:
            running = [t for t in threading.enumerate() if t is not me and not t.daemon and t.is_alive()]
            if not running:
                return
            for thread in running:
                thread.join()
    except KeyboardInterrupt:  # Ctrl-C while waiting: report what was recorded
        return


def _restore_streams(streams: tuple[TextIO, TextIO]) -> None:
    """Give tfretrace back the terminal: the program may have closed or replaced its streams."""
    out, err = streams
    sys.stdout = out if _usable(out) else _reopen(1)
    sys.stderr = err if _usable(err) else _reopen(2)


def _usable(stream: TextIO | None) -> bool:
    return stream is not None and not getattr(stream, "closed", True)


def _reopen(fd: int) -> TextIO:
    # A closed sys.stderr leaves file descriptor 2 open (Python opens it with closefd=False).
    try:
        return open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    except OSError:
        return open(os.devnull, "w", encoding="utf-8")


def _set_path0(entry: str) -> None:
    if sys.path:
        sys.path[0] = entry
    else:
        sys.path.append(entry)


def exit_status(code: object) -> int:
    """The status python gives ``sys.exit(code)``: None is 0, a message is printed and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_user_traceback(exc: BaseException) -> None:
    """Print the traceback python would, without tfretrace's and runpy's own frames.

    A program that installed its own ``sys.excepthook`` (rich, a logging setup) gets it called,
    as python would.
    """
    drop_our_frames(exc, set())
    # python flushes stdout before a traceback and ignores a failure there (a reader gone away):
    # the traceback, not a second BrokenPipeError, is what the program ends with.
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stdout.flush()
    hook = sys.excepthook
    if hook is not sys.__excepthook__:
        try:
            hook(type(exc), exc, exc.__traceback__)
            return
        except Exception:  # a broken hook: python prints both; the plain traceback is enough
            pass
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


def _ours(filename: str) -> bool:
    """A frame of tfretrace (the CLI, the trace hooks) or of runpy, frozen or not."""
    return filename.startswith((PACKAGE_DIR, "<frozen runpy")) or filename == runpy.__file__


def drop_our_frames(exc: BaseException, seen: set[int]) -> None:
    """Unlink our frames from the traceback of ``exc`` and of the exceptions chained to it."""
    if id(exc) in seen:
        return
    seen.add(id(exc))
    unlink_frames(exc, _ours)
    if isinstance(exc, SyntaxError) and _only_ours(exc):
        # The script did not compile: python names the file, line and caret with no traceback,
        # and every frame left is runpy's or tfretrace's.
        exc.__traceback__ = None
    for other in (exc.__cause__, exc.__context__):
        if other is not None:
            drop_our_frames(other, seen)


def _only_ours(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if not _ours(tb.tb_frame.f_code.co_filename):
            return False
        tb = tb.tb_next
    return True
