"""`lint --fix`/`--diff` on a valid file nested deeper than the rewriter recurses: the other files are fixed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfretrace.cli.lint_command import main

FIXABLE = "import tensorflow as tf\n\n\n@tf.function\ndef f(x):\n    print(x)\n    return x\n"


@pytest.mark.parametrize("nesting", ["[" * 150 + "]" * 150, "g(" * 150 + "1" + ")" * 150])
@pytest.mark.parametrize("mode", ["--fix", "--diff"])
def test_a_deeply_nested_file_does_not_stop_the_others_being_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], nesting: str, mode: str
) -> None:
    monkeypatch.chdir(tmp_path)
    deep = FIXABLE + f"\nDEEP = {nesting}\n"
    Path("a_deep.py").write_text(deep)
    Path("b_plain.py").write_text(FIXABLE)
    code = main(["--no-config", "--no-cache", "--unsafe-fixes", mode, "a_deep.py", "b_plain.py"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert Path("a_deep.py").read_text() == deep
    if mode == "--fix":
        assert "tf.print(x)" in Path("b_plain.py").read_text()
    else:
        assert code == 1 and "+++ b/b_plain.py" in out and "+    tf.print(x)" in out
        assert Path("b_plain.py").read_text() == FIXABLE
    assert "a_deep.py" in err  # said why that file was not fixed
