"""Sessions for an eval command; the one implementation is ``evallens.db.sessions``."""

from evallens.db.sessions import open_sessions

__all__ = ["open_sessions"]
