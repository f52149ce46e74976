"""Files the eval engine writes for people to read back: whole or not at all."""

import contextlib
import os
import tempfile
from pathlib import Path


def write_text_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it: a write cut short (a full disk,
    a signal) leaves ``path`` as it was, never its first part. Raises ``OSError``."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(handle, 0o666 & ~_umask())  # as open() would create it, not mkstemp's 0600
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
