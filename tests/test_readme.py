"""The README's snippets run: each fenced block says how in the HTML comment before it (drift fails)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# Matrix rows leave it out (tools/matrix.py): the README shows the reference environment's output.
pytestmark = pytest.mark.single_env

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MODES = ("shell", "python", "output-of", "compile", "skip")

# What `shell` blocks find in their folder: the program the README calls train.py (it retraces
# on shape and takes any arguments), a clean src/ to lint, a second worker's session.
TRAIN = """
import sys
import tensorflow as tf

@tf.function
def train_step(x):
    return tf.reduce_sum(x)

for n in range(3, 7):
    train_step(tf.ones([2, n]))
print("trained", sys.argv[1:])
"""
# Names the README's Python blocks use without defining them.
PRELUDE = """
import tensorflow as tf
import tfretrace

def train():
    @tf.function
    def step(x):
        return x + 1
    for n in (1, 2, 3):
        step(tf.zeros([n]))
"""


@dataclass(frozen=True)
class Block:
    line: int
    mode: str
    argument: str
    text: str


def blocks() -> list[Block]:
    """Every fenced block with the doctest comment right before it (a block without one is an error)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            start = i
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            marker = re.fullmatch(r"<!-- doctest: ([\w-]+)(?:: (.+?))? -->", lines[start - 1].strip())
            mode, argument = (marker.group(1), marker.group(2) or "") if marker else ("", "")
            found.append(Block(start + 1, mode, argument, "\n".join(lines[start + 1:end]) + "\n"))
            i = end
        i += 1
    return found


def test_every_block_says_how_it_is_checked() -> None:
    for block in blocks():
        assert block.mode in MODES, f"README.md:{block.line}: no <!-- doctest: ... --> comment before the block"
        if block.mode in ("skip", "compile", "output-of"):
            assert block.argument.strip(), f"README.md:{block.line}: {block.mode} needs a reason or command"


def _of(mode: str) -> list[Block]:
    return [b for b in blocks() if b.mode == mode]


def _env() -> dict[str, str]:
    source = str(ROOT / "src")
    env = dict(os.environ, NO_COLOR="1", COLUMNS="200", TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join([source, *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


@pytest.mark.parametrize("block", _of("compile"), ids=lambda b: f"line{b.line}")
def test_fragments_are_python(block: Block) -> None:
    compile(block.text, f"README.md:{block.line}", "exec")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("readme")
    (path / "train.py").write_text(TRAIN, encoding="utf-8")
    (path / "src").mkdir()
    (path / "src" / "model.py").write_text("def double(x):\n    return 2 * x\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "tfretrace", "run", "--label", "worker1", "--save", "worker1.json",
                           "train.py"], cwd=path, env=_env(), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return path


def _commands(text: str) -> list[list[str]]:
    commands = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append([sys.executable, "-m", "tfretrace", *words[1:]] if words[0] == "tfretrace" else words)
    return commands


@pytest.mark.tf
@pytest.mark.parametrize("block", _of("shell"), ids=lambda b: f"line{b.line}")
def test_shell_blocks_run(block: Block, folder: Path) -> None:
    for command in _commands(block.text):
        if command[0] == "python":
            command[0] = sys.executable
        done = subprocess.run(command, cwd=folder, env=_env(), capture_output=True, text=True, timeout=600,
                              check=False)
        assert done.returncode == 0, f"README.md:{block.line}: {shlex.join(command)}\n{done.stderr[-3000:]}"


@pytest.mark.tf
@pytest.mark.parametrize("block", _of("python"), ids=lambda b: f"line{b.line}")
def test_python_blocks_run(block: Block, tmp_path: Path) -> None:
    program = tmp_path / "snippet.py"
    program.write_text(PRELUDE + block.text, encoding="utf-8")
    done = subprocess.run([sys.executable, str(program)], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, f"README.md:{block.line}\n{done.stderr[-3000:]}"


def _normal(line: str) -> str:
    """A line without what changes from run to run: times, decimals, column padding."""
    line = re.sub(r"\d+(?:\.\d+)? ?(?:ms|s)\b", "<t>", line)
    line = re.sub(r"\d+\.\d+", "<n>", line)
    return " ".join(line.split())


@pytest.mark.tf
@pytest.mark.parametrize("block", _of("output-of"), ids=lambda b: f"line{b.line}")
def test_shown_output_is_what_the_command_prints(block: Block) -> None:
    done = subprocess.run(_commands(block.argument)[0], cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = [_normal(line) for line in (done.stdout + done.stderr).splitlines()]
    at = 0
    for shown in block.text.splitlines():
        if not shown.strip() or shown.strip() == "...":
            continue
        wanted = _normal(shown)
        hit = next((i for i in range(at, len(printed)) if wanted in printed[i]), None)
        assert hit is not None, f"README.md:{block.line}: not printed (in this order) by {block.argument}:\n{shown}"
        at = hit + 1
