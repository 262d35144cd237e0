"""A session turned into file changes and measured: anchor checks, all-or-nothing writes, verify runs."""
