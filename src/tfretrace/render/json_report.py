"""The JSON report: the session's schema-1 JSON, the same text ``--save`` writes."""

from __future__ import annotations

from tfretrace.records.session import Session


class JsonRenderer:
    """Render a session as its public JSON form (see docs/reports.md for the fields)."""

    name = "json"
    extension = ".json"

    def render(self, session: Session) -> str:
        """The JSON text; ``tfretrace.load`` reads it back unchanged."""
        return session.to_json()
