"""The version of tfretrace, where every layer can read it without importing the package's public face."""

__version__ = "0.2.0.dev0"
