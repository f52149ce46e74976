"""Reading a request body under a size cap, before and after gzip, without buffering a bomb."""

import asyncio
import zlib
from collections.abc import AsyncIterator, Callable

GZIP_WBITS = 16 + zlib.MAX_WBITS
CHUNK_BYTES = 64 * 1024


class BodyTooLarge(Exception):
    """The body, or what it inflates to, is over the limit."""


class BadEncoding(Exception):
    """The body says it is gzip but is not."""


class BodyTimeout(Exception):
    """The client stopped sending its body part way."""


async def read_capped(
    chunks: AsyncIterator[bytes],
    max_bytes: int,
    on_size: Callable[[int], None] | None = None,
    idle_timeout_s: float | None = None,
    total_timeout_s: float | None = None,
) -> bytes:
    """The whole body, or ``BodyTooLarge`` as soon as it passes ``max_bytes``, or ``BodyTimeout`` when
    no bytes come for ``idle_timeout_s`` or the whole body has not come in ``total_timeout_s``.

    ``on_size`` hears the size read so far after each chunk (and may raise to stop reading).
    """
    parts: list[bytes] = []
    try:
        # pauses alone are not enough: a byte a little more often than the idle timeout kept a request
        # (and its connection slot) open for as long as a 16 MiB body takes at that pace
        async with asyncio.timeout(total_timeout_s):
            await _read(chunks, parts, max_bytes, on_size, idle_timeout_s)
    except TimeoutError:
        size = sum(len(part) for part in parts)
        raise BodyTimeout(f"the body took over {total_timeout_s:g} s; {size} bytes came") from None
    return b"".join(parts)


async def _read(
    chunks: AsyncIterator[bytes],
    parts: list[bytes],
    max_bytes: int,
    on_size: Callable[[int], None] | None,
    idle_timeout_s: float | None,
) -> None:
    size = 0
    while True:
        try:
            async with asyncio.timeout(idle_timeout_s):
                chunk = await anext(chunks, None)
        except TimeoutError:
            raise BodyTimeout(f"no body bytes for {idle_timeout_s:g} s; {size} bytes came") from None
        if chunk is None:
            return
        size += len(chunk)
        if size > max_bytes:
            raise BodyTooLarge(f"request body is over {max_bytes} bytes")
        if on_size is not None:
            on_size(size)
        parts.append(chunk)


def gunzip_capped(data: bytes, max_bytes: int) -> bytes:
    """Inflate gzip ``data`` a bounded step at a time; ``BodyTooLarge`` once output passes ``max_bytes``.

    Every member is read: RFC 1952 lets a body hold several, one after another, and Go's reader (the
    OpenTelemetry Collector's) reads them all. Reading only the first acknowledged the spans of the
    rest and lost them. Bytes after a member that are not another member are a ``BadEncoding``.
    """
    view = memoryview(data)
    parts: list[bytes] = []
    size = position = 0
    inflater = zlib.decompressobj(GZIP_WBITS)
    pending: bytes | memoryview = b""
    try:
        while True:
            if inflater.eof:
                pending = inflater.unused_data
                if not pending and position == len(view):
                    break
                inflater = zlib.decompressobj(GZIP_WBITS)
            if not pending:
                if position == len(view):
                    raise BadEncoding("body is not valid gzip: truncated stream")
                # input a chunk at a time: what follows a member is copied, and never more than a chunk
                pending = view[position : position + CHUNK_BYTES]
                position += len(pending)
            chunk = inflater.decompress(pending, CHUNK_BYTES)
            pending = inflater.unconsumed_tail
            size += len(chunk)
            if size > max_bytes:
                raise BodyTooLarge(f"decompressed request body is over {max_bytes} bytes")
            if chunk:
                parts.append(chunk)
    except zlib.error as error:
        raise BadEncoding(f"body is not valid gzip: {error}") from None
    return b"".join(parts)
