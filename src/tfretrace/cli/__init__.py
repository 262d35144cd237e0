"""The tfretrace command line: argument parsing, and one module per command."""

from tfretrace.cli.app import main

__all__ = ["main"]
