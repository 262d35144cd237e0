"""Where a nested tf.function def may move into the function around its outer def, and the text it writes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tfretrace.fix.core.hoist import def_moved, hoist_edits, outer_edits
from tfretrace.fix.core.source import SourceReader

MOVABLE = """\
import tensorflow as tf


def main(w):
    scale = 2.0

    def evaluate(x):
        @tf.function
        def score(batch):
            return tf.reduce_sum(batch * w) * scale

        return score(x)

    return [evaluate(tf.ones([2])) for _ in range(3)]
"""


def _edits(tmp_path: Path, text: str, line: int, name: str = "score") -> object:
    (tmp_path / "prog.py").write_text(text)
    reader = SourceReader(tmp_path)
    definition = reader.function_at(f"prog.py:{line}", name)
    assert definition is not None and definition.outer == "evaluate"  # found: a refusal is outer_edits' own
    return outer_edits(definition, reader)


def test_a_def_over_the_outer_outer_names_moves_before_its_outer_def(tmp_path: Path) -> None:
    edits = _edits(tmp_path, MOVABLE, 9)
    assert edits is not None
    removal, insertion = edits  # type: ignore[misc]
    assert (removal.span.line, removal.span.end_line, removal.text) == (9, 10, "")
    assert (insertion.span.line, insertion.span.col) == (7, 4)
    assert insertion.text == "@tf.function\ndef score(batch):\n    return tf.reduce_sum(batch * w) * scale\n"
    ast.parse(insertion.text)
    # The module-level hoist does not take it (it closes over main's names); def_moved falls to this one.
    reader = SourceReader(tmp_path)
    assert def_moved(reader.function_at("prog.py:9", "score"), reader) == edits


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("    def evaluate(x):\n", "    def evaluate(x, scale=1.0):\n"), "reads a parameter of its outer def"),
        (("        return score(x)\n", "        for scale in (1, 2):\n            pass\n        return score(x)\n"),
         "reads a loop variable of its outer def"),
        (("    scale = 2.0\n", "    scale = 2.0\n    score = None\n"), "its name is bound where it would go"),
        (("        return score(x)\n", "        score = tf.function(lambda b: b)\n        return score(x)\n"),
         "its outer def binds its name again"),
        (("            return tf.reduce_sum(batch * w) * scale\n",
          "            nonlocal w\n            return tf.reduce_sum(batch * w) * scale\n"), "declares nonlocal"),
        # Evaluated where the def stands: a default or a decorator argument reading main's names (bound later).
        (("        def score(batch):\n", "        def score(batch, s=scale):\n"), "a default reads main's name"),
        (("        @tf.function\n", "        @tf.function(jit_compile=scale > 1)\n"), "a decorator reads main's name"),
        # main reads a module-level score elsewhere: the moved def would shadow it there.
        (("    return [evaluate", "    print(score)\n    return [evaluate"), "main reads the name elsewhere"),
        # A string spanning lines: dedenting the def would change its text.
        (("            return tf.reduce_sum(batch * w) * scale\n",
          "            note = \"\"\"a\n              b\"\"\"\n            return tf.reduce_sum(batch * w) * scale\n"),
         "a multi-line string"),
        # It reads no name of main (only the module's): the cells its objects share could not show one main call.
        (("            return tf.reduce_sum(batch * w) * scale\n", "            return tf.reduce_sum(batch)\n"),
         "reads no name of main"),
    ],
)
def test_not_moved(tmp_path: Path, change: tuple[str, str], why: str) -> None:
    text = MOVABLE.replace(*change, 1)
    assert text != MOVABLE
    tree = ast.parse(text)
    line = next(n.lineno for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "score")
    assert _edits(tmp_path, text, line) is None, why


def test_a_def_in_a_module_level_function_is_not_this_move(tmp_path: Path) -> None:
    text = (
        "import tensorflow as tf\n\n\ndef evaluate(x):\n    @tf.function\n    def score(b):\n        return b\n\n"
        "    return score(x)\n"
    )
    assert _edits(tmp_path, text, 6) is None


def test_an_outer_def_in_a_branch_of_the_function_is_not_moved(tmp_path: Path) -> None:
    # evaluate under an if of main (as under a loop, the def runs per pass): only a statement of main's own body.
    looped = MOVABLE.replace("    def evaluate(x):\n", "    if scale:\n     def evaluate(x):\n")
    # Re-indent evaluate's body under the if (one more space) so the file parses.
    for text in ("@tf.function", "def score", "    return tf.reduce_sum", "return score(x)"):
        looped = looped.replace("        " + text, "         " + text)
    tree = ast.parse(looped)
    line = next(n.lineno for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "score")
    assert _edits(tmp_path, looped, line) is None


def test_the_module_level_hoist_refuses_a_default_read_from_its_outer_def(tmp_path: Path) -> None:
    text = (
        "import tensorflow as tf\n\n\ndef evaluate(x, scale):\n    @tf.function\n    def score(b, scale=scale):\n"
        "        return b * scale\n\n    return score(x)\n"
    )
    (tmp_path / "prog.py").write_text(text)
    reader = SourceReader(tmp_path)
    definition = reader.function_at("prog.py:6", "score")
    assert definition is not None and not definition.closes_over  # its own parameter hides the read
    assert hoist_edits(definition, reader) is None
