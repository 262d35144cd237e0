"""``tfretrace completion bash|zsh|fish``: shell completion scripts made from the argument parsers."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Mapping

SHELLS = ("bash", "zsh", "fish")


def options_by_command(parser: argparse.ArgumentParser, lint: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Each subcommand and its option strings, read from the parsers themselves (never out of date)."""
    found: dict[str, list[str]] = {}
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        choices = action.choices if isinstance(action.choices, Mapping) else {}
        for name, sub in choices.items():
            found[name] = _options(lint if name == "lint" else sub)
    return found


def _options(parser: argparse.ArgumentParser) -> list[str]:
    # --help once: the parser's own, or added where a parser has none.
    return sorted({"--help", *(s for a in parser._actions for s in a.option_strings if s.startswith("--"))})


def script(shell: str, commands: dict[str, list[str]], causes: list[str]) -> str:
    """The completion script for ``shell`` (one of SHELLS)."""
    if shell == "fish":
        return _fish(commands, causes)
    bash = _bash(commands, causes)
    if shell == "zsh":  # zsh runs bash completion functions through bashcompinit
        return "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n" + bash
    return bash


def _bash(commands: dict[str, list[str]], causes: list[str]) -> str:
    cases = "\n".join(
        f"        {name}) opts={shlex.quote(' '.join(opts))} ;;" for name, opts in sorted(commands.items())
    )
    names = " ".join(sorted(commands))
    return f"""# tfretrace completion for bash (tfretrace completion bash)
_tfretrace() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" opts=""
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "{names} --help --version" -- "$cur"))
        return
    fi
    case "${{COMP_WORDS[1]}}" in
{cases}
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    elif [[ "${{COMP_WORDS[1]}}" == explain ]]; then
        COMPREPLY=($(compgen -W {shlex.quote(' '.join(causes))} -- "$cur"))
    elif [[ "${{COMP_WORDS[1]}}" == completion ]]; then
        COMPREPLY=($(compgen -W "{' '.join(SHELLS)}" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}}
complete -o filenames -F _tfretrace tfretrace
"""


def _fish(commands: dict[str, list[str]], causes: list[str]) -> str:
    lines = ["# tfretrace completion for fish (tfretrace completion fish)", "complete -c tfretrace -f"]
    names = " ".join(sorted(commands))
    lines.append(f'complete -c tfretrace -n "not __fish_seen_subcommand_from {names}" -a "{names}"')
    for name, opts in sorted(commands.items()):
        for option in opts:
            lines.append(f'complete -c tfretrace -n "__fish_seen_subcommand_from {name}" -l {option[2:]}')
        if name not in ("explain", "completion"):
            lines.append(f'complete -c tfretrace -n "__fish_seen_subcommand_from {name}" -F')
    lines.append(f'complete -c tfretrace -n "__fish_seen_subcommand_from explain" -a "{" ".join(causes)}"')
    lines.append(f'complete -c tfretrace -n "__fish_seen_subcommand_from completion" -a "{" ".join(SHELLS)}"')
    return "\n".join(lines) + "\n"
