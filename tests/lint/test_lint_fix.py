"""`tfretrace lint --fix / --diff / --unsafe-fixes`: round trips (fix, re-lint, parse) and refusals."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from tfretrace.cli.lint_command import main
from tfretrace.fix.applying.apply import FixError
from tfretrace.lint import lint_source
from tfretrace.lint.fixes import FIXABLE, SAFE, fix_files, write_fixes

FIXTURES = Path(__file__).parent / "fixtures"

SOURCE = textwrap.dedent(
    """\
    import time

    import tensorflow as tf


    @tf.function(experimental_relax_shapes=True)  # keep this comment
    def step(x, i):
        print("tracing", x)  # noqa: TFR108
        t0 = time.time()
        return x * 2, t0


    @tf.function
    def show(x):
        print("x is", x, sep=" ")
        print("to a file", file=None)
        return x


    for i in range(3):
        step(tf.constant(1.0), i)
        show(tf.zeros([2]))
        step(1.0, len([1,
                       2]))
    """
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SOURCE)
    return tmp_path


def codes_in(text: str) -> Counter[str]:
    return Counter(f.code for f in lint_source(text))


def test_fix_safe_only_by_default(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--fix", "--no-cache", "--format", "json", "train.py"]) == 1
    captured = capsys.readouterr()
    after = (project / "train.py").read_text()
    assert "@tf.function(reduce_retracing=True)  # keep this comment" in after
    assert after.replace("reduce_retracing", "experimental_relax_shapes") == SOURCE
    # The report is of the fixed file: the unsafe findings are left and counted.
    left = Counter(f["code"] for f in json.loads(captured.out)["findings"])
    assert left == Counter({"TFR108": 2, "TFR110": 1, "TFR106": 1, "TFR116": 1})
    assert "4 more with --unsafe-fixes" in captured.err


def test_unsafe_fix_round_trip(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--fix", "--unsafe-fixes", "--no-cache", "train.py"]) == 1
    after = (project / "train.py").read_text()
    ast.parse(after)
    assert codes_in(after) == Counter({"TFR108": 1})  # print(..., file=) has no tf.print form
    lines = after.splitlines()
    assert '    print("tracing", x)  # noqa: TFR108' in lines  # suppressed: never touched
    assert '    tf.print("x is", x, sep=" ")' in lines
    assert '    print("to a file", file=None)' in lines
    assert "    t0 = tf.timestamp()" in lines
    assert "    step(tf.constant(1.0), tf.constant(i))" in lines
    assert "    step(1.0, tf.constant(len([1,\n" in after
    # Fixing again changes nothing.
    capsys.readouterr()
    assert main(["--diff", "--unsafe-fixes", "--no-cache", "train.py"]) == 0
    assert capsys.readouterr().out == ""


def test_text_report_counts_what_fix_would_fix(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-cache", "train.py"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "[*] 1 fixable with --fix (4 more with --unsafe-fixes)"
    assert main(["--no-cache", "--select", "TFR106", "train.py"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "[*] 1 fixable with --fix --unsafe-fixes"
    assert main(["--no-cache", "--format", "json", "train.py"]) == 1
    assert "fixable" not in capsys.readouterr().out


def test_diff_writes_nothing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--diff", "--no-cache", "train.py"]) == 1
    out = capsys.readouterr().out
    assert (project / "train.py").read_text() == SOURCE
    assert out.startswith("--- a/train.py\n+++ b/train.py\n")
    changed = [line for line in out.splitlines() if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    assert changed == [
        "-@tf.function(experimental_relax_shapes=True)  # keep this comment",
        "+@tf.function(reduce_retracing=True)  # keep this comment",
    ]
    assert main(["--diff", "--exit-zero", "--no-cache", "train.py"]) == 0


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("TFR*.py")), ids=lambda p: p.stem)
def test_fixture_round_trip(fixture: Path, tmp_path: Path) -> None:
    """Every fixture, fixed with unsafe fixes: it parses, the fixed findings are gone, no new ones."""
    target = tmp_path / fixture.name
    before = fixture.read_text(encoding="utf-8")
    target.write_text(before, encoding="utf-8")
    result = fix_files([str(target)], sorted(FIXABLE | {fixture.stem}), 5_000_000, unsafe=True)
    assert result.failed == []
    if fixture.stem in FIXABLE:
        assert result.fixed >= 1
    after = result.changes[0].after if result.changes else before
    ast.parse(after)
    wanted = FIXABLE | {fixture.stem}
    old = Counter(c for c in codes_in(before).elements() if c in wanted)
    new = Counter(c for c in codes_in(after).elements() if c in wanted)
    assert sum(old.values()) - sum(new.values()) == result.fixed
    assert not new - old


def test_no_fix_without_a_tensorflow_import(tmp_path: Path) -> None:
    # `from tensorflow import function` gives no name to write tf.constant with: no unsafe fix.
    path = tmp_path / "m.py"
    path.write_text(
        "from tensorflow import function\n\n@function\ndef f(x):\n    print(x)\n    return x\n\n"
        "for i in range(3):\n    f(i)\n"
    )
    result = fix_files([str(path)], sorted(FIXABLE), 5_000_000, unsafe=True)
    assert (result.fixed, result.changes, result.unsafe_skipped) == (0, [], 0)


def test_relax_shapes_next_to_reduce_retracing_is_left(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        "import tensorflow as tf\n\nf = tf.function(abs, reduce_retracing=True, experimental_relax_shapes=True)\n"
    )
    assert fix_files([str(path)], sorted(SAFE), 5_000_000, unsafe=False).changes == []


def test_non_utf8_and_bom_files_are_not_rewritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    bad = "import tensorflow as tf\n\nf = tf.function(abs, experimental_relax_shapes=True)  # é\n"
    Path("latin.py").write_bytes(b"# -*- coding: latin-1 -*-\n" + bad.encode("latin-1"))
    Path("bom.py").write_bytes(b"\xef\xbb\xbf" + bad.encode("utf-8"))
    snapshot = {p: Path(p).read_bytes() for p in ("latin.py", "bom.py")}
    assert main(["--fix", "--no-cache", "latin.py", "bom.py"]) == 1
    assert {p: Path(p).read_bytes() for p in snapshot} == snapshot


def test_crlf_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    head = b"import tensorflow as tf\r\n\r\nf = tf.function(abs, "
    Path("w.py").write_bytes(head + b"experimental_relax_shapes=True)\r\n")
    assert main(["--fix", "--no-cache", "w.py"]) == 0
    assert Path("w.py").read_bytes() == head + b"reduce_retracing=True)\r\n"


def test_a_linked_file_is_fixed_through_its_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("real").mkdir()
    Path("real/m.py").write_text("import tensorflow as tf\n\nf = tf.function(abs, experimental_relax_shapes=True)\n")
    Path("m.py").symlink_to("real/m.py")
    assert main(["--fix", "--no-cache", "m.py"]) == 0
    assert Path("m.py").is_symlink()
    assert "reduce_retracing=True" in Path("real/m.py").read_text()


def test_odd_file_names_are_escaped_in_the_diff_and_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    bad = "import tensorflow as tf\nf = tf.function(abs, experimental_relax_shapes=True)\n"
    names = [b"caf\xe9.py", b"line\nbreak.py"]
    for name in names:
        Path(os.fsdecode(name)).write_text(bad)
    assert main(["--diff", "--no-cache", "."]) == 1
    headers = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("---", "+++"))]
    assert headers == ["--- a/caf\\xe9.py", "+++ b/caf\\xe9.py", "--- a/line\\nbreak.py", "+++ b/line\\nbreak.py"]
    assert main(["--fix", "--no-cache", "."]) == 0
    assert all("reduce_retracing" in Path(os.fsdecode(name)).read_text() for name in names)


def test_file_changed_before_writing_is_not_written(project: Path) -> None:
    result = fix_files(["train.py"], sorted(FIXABLE), 5_000_000, unsafe=False)
    assert result.fixed == 1
    (project / "train.py").write_text(SOURCE + "# edited meanwhile\n")
    with pytest.raises(FixError, match="changed while"):
        write_fixes(result)
    assert (project / "train.py").read_text() == SOURCE + "# edited meanwhile\n"


def notebook(cells: list[list[str]], **layout: object) -> str:
    doc = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# a title\n"]},
            *({"cell_type": "code", "metadata": {}, "outputs": [{"output_type": "stream", "name": "stdout",
               "text": ["kept\n"]}], "execution_count": 1, "source": c} for c in cells),
        ],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
    }
    return json.dumps(doc, **layout) + "\n"  # type: ignore[arg-type]


NB_CELLS = [
    ["%pip install -q tensorflow\n", "import tensorflow as tf"],
    ["!nvidia-smi\n", "@tf.function(experimental_relax_shapes=True)\n", "def f(x):\n",
     "    print('x is', x)  # café\n", "    return x"],
    ["for i in range(3):\n", "    f(i)"],
]


def test_notebook_fix_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixes land in their cells; magics, outputs and nbformat's own JSON layout are kept."""
    monkeypatch.chdir(tmp_path)
    before = notebook(NB_CELLS, indent=1, sort_keys=True, ensure_ascii=False)
    Path("nb.ipynb").write_text(before, encoding="utf-8")
    assert main(["--fix", "--unsafe-fixes", "--no-cache", "nb.ipynb"]) == 0
    after = Path("nb.ipynb").read_text(encoding="utf-8")
    fixed = [[line.replace("experimental_relax_shapes", "reduce_retracing").replace("print(", "tf.print(")
              .replace("f(i)", "f(tf.constant(i))") for line in cell] for cell in NB_CELLS]
    assert after == notebook(fixed, indent=1, sort_keys=True, ensure_ascii=False)
    changed = [line for line in after.splitlines() if line not in before.splitlines()]
    assert len(changed) == 3  # only the three fixed lines differ in the file


def test_notebook_in_an_unknown_layout_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Saved without indentation: re-saving it would rewrite every line, so it is not fixed.
    monkeypatch.chdir(tmp_path)
    text = notebook(NB_CELLS, separators=(", ", ":"))
    Path("nb.ipynb").write_text(text, encoding="utf-8")
    assert main(["--fix", "--no-cache", "nb.ipynb"]) == 1
    assert Path("nb.ipynb").read_text(encoding="utf-8") == text
    assert "nb.ipynb: its JSON layout would change on saving; not fixed" in capsys.readouterr().err


PROGRAM = textwrap.dedent(
    """\
    import random

    import tensorflow as tf


    @tf.function(experimental_relax_shapes=True)
    def step(x, i):
        return x * tf.cast(i, x.dtype)


    @tf.function
    def noise():
        return random.random()


    total = 0.0
    for i in range(5):
        total += float(step(tf.constant(2.0), i))
    draws = {float(noise()) for _ in range(3)}

    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1, kernel_initializer="ones")])
    predicted = 0.0
    for batch in [tf.ones((k, 2)) * k for k in range(1, 6)]:
        predicted += float(model.predict(batch, verbose=0).sum())
    print(total, step.experimental_get_tracing_count(), len(draws), predicted, model.predict_function is None)
    """
)


@pytest.mark.tf
def test_fixed_program_traces_once_and_computes_the_same(tmp_path: Path) -> None:
    """The unsafe fixes on a real program: the same sum with one trace instead of five (TFR106),
    a new random number per call instead of one frozen at trace time (TFR109), and the same
    predictions from calling the model, with no predict function traced at all (TFR107)."""
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)

    def run() -> list[str]:
        done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=True, timeout=300)
        return done.stdout.split()

    assert run() == ["20.0", "5", "1", "110.0", "False"]
    lint = [sys.executable, "-m", "tfretrace.lint", "--no-cache", "--fix", "--unsafe-fixes", str(path)]
    assert subprocess.run(lint, capture_output=True, text=True, timeout=120).returncode == 0
    fixed = path.read_text()
    assert "tf.constant(i)" in fixed and "tf.random.uniform([])" in fixed
    assert "model(batch, training=False).numpy().sum()" in fixed
    # The same predictions, and Keras never made a predict function (predict_on_batch would trace one).
    assert run() == ["20.0", "1", "3", "110.0", "True"]
