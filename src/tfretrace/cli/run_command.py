"""``tfretrace run``: the program under the monitor, then the report, the session and the fix plans."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from tfretrace._util.config import ProjectConfig, ProjectConfigError
from tfretrace._util.config import find as find_config
from tfretrace._util.config import load as load_config
from tfretrace._util.text import printable
from tfretrace.cli import compare_command, last_session
from tfretrace.cli.invocation import tfretrace_command
from tfretrace.cli.next_commands import emit_next, emit_plans
from tfretrace.cli.output import (
    UsageError,
    add_output_options,
    checked_outputs,
    checked_save,
    console_for,
    emit,
    in_folder,
    is_tty,
    save_session,
)
from tfretrace.cli.program import (
    EXIT_OK,
    EXIT_RETRACED,
    EXIT_USAGE,
    Target,
    execute,
    find_module,
    is_notebook,
    runnable,
    wait_for_threads,
)
from tfretrace.records.errors import TensorFlowMissingError, UnsupportedVersionError

if TYPE_CHECKING:

    from tfretrace.cli.progress import Progress
    from tfretrace.records.session import Session


def configure(run: argparse.ArgumentParser) -> None:
    """The ``run`` subcommand's usage, description and options (its one-line help is app.SUMMARIES')."""
    run.usage = "tfretrace run [options] (script.py | -m module) [args ...]"
    run.description = ("Run 'script.py [args]' or '-m module [args]' like python does, under the "
                       "retrace monitor, then print the report to stderr (stdout stays the program's).")
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module like python -m")
    run.add_argument("--save", metavar="FILE.json", help="keep the session in this file")
    run.add_argument("--warn", action="store_true", help="also warn live at each retrace")
    run.add_argument(
        "--tensorboard", metavar="LOGDIR",
        help="also write each function's traces and trace seconds (scalars, against its calls) and "
        "each retrace's explanation (text) to TensorBoard event files in LOGDIR",
    )
    run.add_argument(
        "--no-progress", action="store_true",
        help="no live status line on the terminal while the program runs",
    )
    run.add_argument(
        "--keep-tf-warning", action="store_true",
        help="keep TensorFlow's own 'N out of the last M calls ... triggered tf.function retracing' "
        "warning (hidden while tfretrace monitors: the report explains each retrace)",
    )
    run.add_argument("--label", help="name of this process in merged reports (default workerN)")
    run.add_argument(
        "--prevent", metavar="PROFILE.json",
        help="prevent the shape retraces PROFILE (a profile file or a saved session) recorded: each "
        "function whose recorded calls varied in shape is traced once, generally, at its first call; "
        "the calls the run meets outside it widen a profile file (created when missing) "
        "(default: $TFRETRACE_PREVENT)",
    )
    run.add_argument(
        "--no-learn", action="store_true",
        help="with --prevent: use the profile as it is, never widen or create it",
    )
    run.add_argument(
        "--no-prevent", action="store_true",
        help="run without prevention, whatever $TFRETRACE_PREVENT or [tool.tfretrace.run] prevent say",
    )
    run.add_argument(
        "--fix-plan", action="store_true",
        help="TensorFlow checks each fix step after the program (its Python runs again); -v prints the long plans",
    )
    compare_command.add_run_options(run)
    add_output_options(run)
    run.add_argument("program", nargs=argparse.REMAINDER, metavar="script.py [args ...]")


def command_run(ns: argparse.Namespace, target: Target) -> int:
    """Run the program under the monitor; report and save even when it fails."""
    settings = project_settings().run
    # Options given on the command line win; the project's settings fill the rest.
    ns.keep_tf_warning = ns.keep_tf_warning or settings.keep_tf_warning
    ns.fix_plan = ns.fix_plan or settings.fix_plan
    # Check every output before spending minutes on the program, and pin relative paths to
    # this folder: the program may chdir() away.
    # No output replaces the program itself (nor any Python source: checked_output).
    own = () if target.script is None else (target.script,)
    outputs = checked_outputs(ns.output, ns.format, stdout=False, folder=settings.output_dir, reads=own)
    save = None if ns.save is None else checked_save(in_folder(ns.save, settings.output_dir), own)
    # Where the command was typed and the project's folder, before the program may chdir() away.
    here = Path.cwd()
    project = last_session.project_folder(here)
    if target.script is not None and not runnable(Path(target.script)):
        raise UsageError(f"can't open file {target.script!r}: no such file")
    if target.script is not None and is_notebook(target.script):
        from tfretrace.cli.notebook_run import NotebookRunError, code_cells  # loaded for a notebook only

        try:  # IPython syntax is refused now, before minutes of monitoring
            code_cells(Path(target.script))
        except NotebookRunError as exc:
            raise UsageError(str(exc), hint=False) from None
    if target.module is not None and find_module(target.module) is None:
        raise UsageError(f"no module named {target.module!r}")
    tensorboard = None if ns.tensorboard is None else _tensorboard_dir(ns.tensorboard)
    # The project's baseline and prevention profile apply when the command line names none.
    if ns.baseline is None:
        ns.baseline = _configured(settings.baseline, "baseline", "--save-baseline")
    gate = compare_command.RunGate.from_args(ns, own)
    prevent = ns.prevent
    no_prevent, no_learn = getattr(ns, "no_prevent", False), getattr(ns, "no_learn", False)
    if prevent is None and not os.environ.get("TFRETRACE_PREVENT") and not no_prevent:
        prevent = _configured(settings.prevent, "prevent", "--save")
    if no_prevent and ns.prevent is not None:
        raise UsageError("--prevent and --no-prevent contradict each other")
    profile = None if no_prevent else planned_prevention(prevent, learn=not no_learn)
    monitor = importlib.import_module("tfretrace.runtime.monitor")
    strict = importlib.import_module("tfretrace.budget").strict_from_env
    # Before the XLA log tap may take fd 2: the status line's terminal, the program's streams.
    # The digest's stdout first: the status line's guard then wraps it like any program stream.
    # Under --fix-plan too: its report's Check: line verifies the plans, and the verdict on stdout
    # needs the recorded run's digest.
    outputs_tap = _stdout_tap(save is not None or bool(ns.fix_plan))
    progress = _live_status(ns)
    try:
        # tfretrace run starts before TensorFlow loads: it may lower TF_CPP_MIN_LOG_LEVEL to read
        # the compile log, and hides again what the user's level hides.
        monitor.prepare_xla(lower_level=True)
        installed = monitor.install(warn=ns.warn, keep_tf_warning=ns.keep_tf_warning)
        installed.pinned = True  # the program's own tfretrace.stop() does not end the run's record
        if ns.fix_plan or save is not None:
            installed.keep_for_probe()  # the probe at the end asks about nested closures too
        # TFRETRACE_STRICT=N turns every function into a budget of N traces for unmodified scripts;
        # the project's max-traces does the same when the variable is not set.
        environ, origin = dict(os.environ), None
        if settings.max_traces is not None and not environ.get("TFRETRACE_STRICT", "").strip():
            environ["TFRETRACE_STRICT"] = str(settings.max_traces)
            origin = f"[tool.tfretrace.run] max-traces = {settings.max_traces}"
        strict(installed, environ, origin)
    except (TensorFlowMissingError, UnsupportedVersionError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else "TensorFlow is not installed"
        with contextlib.suppress(RuntimeError):
            monitor.stop()
        if progress is not None:
            progress.detach()
            progress.stream.close()
        if outputs_tap is not None:
            outputs_tap.finish()
        raise UsageError(first) from None
    if progress is not None:
        installed.add_listener(progress)
    parent = os.getpid()
    prevention = None if profile is None else profile.start(installed)
    stdout = None
    broken: Exception | None = None  # tfretrace failing after the program: its status still wins
    try:
        status = execute(target)
        if os.getpid() == parent:
            wait_for_threads()
    finally:
        # A child the program forked returns here too when its copy of the program ends: the
        # run's status line, report and --save belong to the process `run` started, never to a
        # copy (a child that outlives its parent would replace the parent's session).
        if os.getpid() == parent:
            installed.program_done = True  # the planner may now ask TensorFlow (runtime.probe)
            if progress is not None:
                installed.remove_listener(progress)
                progress.detach()
                progress.clear()
                progress.stream.close()
            if outputs_tap is not None:
                stdout = outputs_tap.finish()  # the program's part of stdout ends here: the report is ours
            # The program may have called tfretrace.stop() itself (the monitor went on
            # recording); stopping it here is the real end.
            if monitor.current() is installed:
                installed.pinned = False
                try:
                    monitor.stop()
                except Exception as exc:  # the analysis at the end: the program's run is over and kept
                    broken = exc
    if os.getpid() != parent:
        return status
    if broken is None:
        try:
            where = _Where(save, outputs, project, here, tensorboard, gate)
            return _reported(installed, ns, target, status, stdout, prevention, where)
        except UsageError:
            raise
        except Exception as exc:
            broken = exc
    installed.internal_error(broken)
    first = (str(broken).splitlines() or [""])[0][:200]
    if getattr(ns, "verbose", False):
        traceback.print_exception(type(broken), broken, broken.__traceback__, file=sys.stderr)
    # As where the report cannot be written: the program's own failure status wins; a program that
    # succeeded gets EXIT_USAGE, so that a gate asked for (--fail-on-retrace, --baseline) never passes unchecked.
    kept = "the program's exit status is kept" if status != EXIT_OK else f"exit {EXIT_USAGE} (the program exited 0)"
    print(f"tfretrace: internal error after the program ended ({type(broken).__name__}: {first}); no report "
          f"was made; {kept}. Please report it (-v shows the traceback).", file=sys.stderr)
    return status if status != EXIT_OK else EXIT_USAGE


class _Where(NamedTuple):
    """Where a run's session and report go, as checked before the program ran."""

    save: Any
    outputs: Any
    project: Any
    here: Path
    tensorboard: Any
    gate: Any


def _reported(
    installed: Any, ns: argparse.Namespace, target: Target, status: int, stdout: Any, prevention: Any, where: _Where,
) -> int:
    """The run's session analysed, saved, kept and reported once the program has ended: the exit status."""
    save, outputs, project, here, tensorboard, gate = where
    installed.halt()
    # The probe runs the program's bodies again (their trace-time prints, logs and counters see it):
    # only where a plan is asked for, to print or to apply from the saved session.
    # The lint of the program's files goes into the session for the HTML report, now or later.
    session: Session = installed.analyzed(probe=bool(ns.fix_plan) or save is not None,
                                          lint=save is not None or bool(outputs))
    if prevention is not None:
        session = prevention.stop(session)
    # The monitor sees tfretrace's own argv once the program is done; record the program's.
    program = target.script if target.script is not None else f"-m {target.module}"
    session = replace(session, argv=(program, *target.args), label=ns.label or session.label, stdout=stdout)
    sys.stdout.flush()
    saved = save_session(session, save)
    # Every run keeps its session, so that the report can end with the commands that apply it.
    kept = last_session.keep(session, project)
    # `tfretrace fix` reads the kept session by default: the next commands need not name it.
    implicit = saved is None and kept is not None
    if saved is None and kept is not None:
        saved = last_session.shown(kept, here)
    if tensorboard is not None:
        _write_tensorboard(session, tensorboard)
    # The report's console, made now: the program may have replaced or closed its streams.
    err = console_for(sys.stderr)
    written = emit(session, ns, err, saved, outputs, implicit=implicit)
    status = final_status(status, session, ns, sys.stderr)
    status = gate.finish(session, status, ns.tolerance, sys.stderr)
    # A report that could not be written is a failure, but never hides the program's own status.
    # The grouped report already gives each step's headline and code: the long plans are -v's.
    if ns.fix_plan and getattr(ns, "verbose", False):
        emit_plans(session, err, saved, target, implicit=implicit)
    else:
        emit_next(session, err, saved, target, implicit=implicit)
    return status if written or status != EXIT_OK else EXIT_USAGE


class _Planned:
    """A checked profile, loaded before the program runs, started once the monitor is."""

    def __init__(self, profile: Any, learn: bool) -> None:
        self._profile = profile
        self._learn = learn
        self._prevention: Any = None

    def start(self, monitor: Any) -> _Planned:
        from tfretrace.runtime.prevent import Prevention

        self._prevention = Prevention(self._profile, monitor, learn=self._learn).start()
        return self

    def stop(self, session: Session) -> Session:
        prevention = self._prevention
        prevention.stop_watching()
        return prevention.finish(session, final=True)  # type: ignore[no-any-return]


def planned_prevention(path: str | None, *, learn: bool = True) -> _Planned | None:
    """The --prevent profile (else $TFRETRACE_PREVENT), read before the program runs; bad file: exit 2.

    With ``learn`` a profile file that does not exist yet is an empty one this run records.
    """
    from tfretrace.runtime.prevent import profile_from_env

    path = path if path is not None else profile_from_env()
    if path is None:
        return None  # prevention (and the planner's rules it checks with) never loads
    from tfretrace.runtime.prevent import load_profile

    return _Planned(load_profile(path, missing_ok=learn), learn)


def _configured(path: Path | None, key: str, writer: str) -> str | None:
    """A file the project's settings name, when it exists; a missing one is a note, not an error."""
    if path is None:
        return None
    if path.is_file():
        return str(path)
    print(f"tfretrace: note: [tool.tfretrace.run] {key} {printable(str(path))!r} does not exist yet "
          f"(write it with {tfretrace_command()} run {writer}); running without it", file=sys.stderr)
    return None


def project_settings() -> ProjectConfig:
    """``[tool.tfretrace.*]`` of the nearest pyproject.toml; a bad setting is a one-line error."""
    try:
        return load_config(find_config(Path.cwd()))
    except ProjectConfigError as exc:
        raise UsageError(str(exc), hint=False) from None


def _tensorboard_dir(text: str) -> Path:
    """Check a --tensorboard folder before running: tensorboard installed, not a file."""
    from tfretrace.integrations.tensorboard import TensorBoardMissingError, check_available

    try:
        check_available()
    except TensorBoardMissingError as exc:
        raise UsageError(str(exc), hint=False) from None
    path = Path(os.path.abspath(text))
    if path.exists() and not path.is_dir():
        raise UsageError(f"--tensorboard {text!r} is a file, not a folder")
    parent = path if path.is_dir() else path.parent
    if not os.access(parent if parent.exists() else parent.parent, os.W_OK):
        raise UsageError(f"--tensorboard {text!r}: folder is not writable")
    return path


def _write_tensorboard(session: Session, logdir: Path) -> None:
    from tfretrace.integrations.tensorboard import write_session

    try:
        count = write_session(session, logdir)
    except OSError as exc:
        print(f"tfretrace: error: could not write TensorBoard events to {str(logdir)!r}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return
    print(f"tfretrace: wrote {count} traces to TensorBoard ({printable(str(logdir))})", file=sys.stderr)


def _live_status(ns: argparse.Namespace) -> Progress | None:
    """A one-line live status on stderr when it is a terminal (never when piped or --no-progress)."""
    stream = sys.stderr
    if ns.no_progress or not is_tty(stream) or os.environ.get("TERM") == "dumb" or _native_log_shown():
        return None
    from tfretrace.cli.progress import Progress  # a terminal's live line: loaded where one is drawn

    width = console_for(stream).width
    # Its own handle on the terminal: the XLA log tap may swap fd 2 for a pipe during the run.
    try:
        terminal = open(os.dup(stream.fileno()), "w", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
    except (OSError, ValueError, AttributeError):
        return None
    progress = Progress(terminal, width)
    progress.attach(is_tty)
    return progress


def _stdout_tap(wanted: bool) -> Any:
    """With --save or --fix-plan (``wanted``), ``sys.stdout`` digested for the session (runtime.output_tap)."""
    if not wanted:
        return None
    tap = importlib.import_module("tfretrace.runtime.output_tap").OutputTap()
    try:
        tap.start()
    except (OSError, ValueError):  # no stdout, or one without a file: the session has no digest
        return None
    return tap


def _native_log_shown() -> bool:
    """Whether TensorFlow's C++ log (INFO and WARNING lines) reaches the terminal during the run.

    It writes straight to file descriptor 2, past any guard: a status line drawn there would
    have TensorFlow's next line run into it. So the line is drawn only when the user's
    TF_CPP_MIN_LOG_LEVEL keeps that log to errors (2 or 3).
    """
    level = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "").strip()
    return level not in ("2", "3")


def final_status(status: int, session: Session, ns: argparse.Namespace, err: TextIO) -> int:
    """The program's status, or EXIT_RETRACED under --fail-on-retrace when something retraced."""
    if status != EXIT_OK or not ns.fail_on_retrace:
        return status
    retracing = [f for f in session.functions if f.retraces > 0]
    if not retracing:
        return status
    names = ", ".join(f.display_name() for f in retracing[:3])
    more = f" and {len(retracing) - 3} more" if len(retracing) > 3 else ""
    print(f"tfretrace: retracing found in {names}{more} (--fail-on-retrace)", file=err)
    return EXIT_RETRACED
