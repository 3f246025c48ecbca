"""Files mpilens writes: whole or not at all, and never through a link someone planted.

Every output (a report, an export, a file of a run directory) is written into a temporary file
created exclusively beside it under a name nobody can guess (``tempfile.mkstemp``: O_EXCL, so a
link planted at that name is never followed), then renamed over the target (a rename replaces a
link; it never writes through one). A failed or interrupted write leaves the previous file as it
was. The run directory's claim (``claim.json``, created exclusively) makes one run, and only one,
the owner of a directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from . import _layout, units


@contextlib.contextmanager
def replacing(path: str | Path, binary: bool = False) -> Iterator[IO[Any]]:
    """Open a temporary file beside path for writing; on success it replaces path, on an error it
    is removed and path is left as it was."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:64]}.", suffix=".tmp", dir=target.parent)
    try:
        # a name's bytes that were not UTF-8 (lone surrogates) are written escaped, never refused
        text_mode = {"encoding": "utf-8", "errors": units.ENCODING_ERRORS}
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else text_mode)) as f:
            yield f
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: str | Path, text: str) -> None:
    """Replace path with text (UTF-8), whole or not at all."""
    with replacing(path) as f:
        f.write(text)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def claim(claim_file: Path, by: str = "mpilens run") -> str:
    """Claim a run directory for one run: create its claim file (claim.json) exclusively
    (FileExistsError when another run claimed it first) and return the token the job's ranks must
    find in it."""
    token = secrets.token_hex(16)
    doc = {"schema": _layout.SCHEMA_CLAIM, "token": token, "by": by, "pid": os.getpid(), "host": socket.gethostname(),
           "created": int(time.time())}
    dfd = os.open(claim_file.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = os.open(claim_file.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666,
                     dir_fd=dfd)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(doc) + "\n")
    finally:
        os.close(dfd)
    return token
