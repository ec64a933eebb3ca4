"""Reading a file safely: a regular file only, never through a link, with a size cap; text
decoded strictly as UTF-8. The one reader of every file slurmgen opens that it did not write.

Used for specs, the files they extend, a site's instance-types.csv, the files of a previous
render in dist/ (the guards, --check), --crd-dir schemas, --verify-argocd (a file or standard
input) and chart files: whatever sits at the path (a FIFO, /dev/zero, a link, a huge or UTF-16
file) ends in one line, never a hang, an unbounded read or a traceback.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

MAX_BYTES = 1024 * 1024  # a spec is a few KiB; 1 MiB leaves room and bounds every later step
#: A rendered file (dist/, a base commit's tree) holds one Kubernetes object, and the API server stores
#: none larger than etcd's request limit (1.5 MiB by default): 4 MiB of YAML is far past any of ours.
RENDERED_MAX_BYTES = 4 * 1024 * 1024


class UnreadableFile(ValueError):
    """An input file that is not read at all (not a regular file, too large, not UTF-8): one line."""


SPEC_ADVICE = "a spec is a few KiB, split shared parts into files named in extends:"


def read_text(path: Path, *, max_bytes: int = MAX_BYTES, advice: str = SPEC_ADVICE) -> str:
    """The file's text: a regular file of at most `max_bytes`, strict UTF-8 (a UTF-8 BOM is dropped).

    A symbolic link is never followed (O_NOFOLLOW): a spec or instance-types.csv committed as a
    link to ~/.aws/credentials must not be read, and its text then quoted in an error in CI logs.
    """
    return decode(read_bytes(path, max_bytes=max_bytes, advice=advice))


def read_bytes(path: Path, *, max_bytes: int, advice: str, follow_links: bool = False) -> bytes:
    """The bytes of a regular file of at most `max_bytes`; UnreadableFile otherwise.

    Opened non-blocking and checked with fstat before reading, so a FIFO never blocks and
    /dev/zero is never read; the size is checked before reading (a 300 MB file is refused
    unread) and the read itself is capped (a file growing meanwhile). A link is refused unless
    `follow_links` (a path the user typed on the command line; its target must still be a
    regular file). OSError propagates (the caller names it).
    """
    if not follow_links and os.path.islink(path):
        raise UnreadableFile("is a symbolic link; inputs are read only as regular files, never through a link "
                             "(copy the file, or name a shared spec in extends:)")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                 | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0)))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(f"is {_file_kind(info.st_mode)}, not a regular file; pass a file")
        if info.st_size > max_bytes:
            raise UnreadableFile(f"larger than {_size(max_bytes)}; {advice}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise UnreadableFile(f"larger than {_size(max_bytes)}; {advice}")
    return data


def read_stream(stream: BinaryIO, *, max_bytes: int, advice: str) -> bytes:
    """At most `max_bytes` of an open stream (standard input): `< /dev/zero` ends after the cap."""
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UnreadableFile(f"larger than {_size(max_bytes)}; {advice}")
    return data


def _size(limit: int) -> str:
    return f"{limit // 1024} KiB"


def decode(data: bytes) -> str:
    """Strict UTF-8; UTF-16/32 (by BOM or NUL bytes) and invalid bytes are refused with the offset."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data[:4096]:
        raise UnreadableFile("is UTF-16 or UTF-32 text (or binary); save it as UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UnreadableFile(f"is not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start}); "
                             "save it as UTF-8") from None
    return text.removeprefix("\ufeff")


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")
