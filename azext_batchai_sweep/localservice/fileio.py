"""Streaming a byte range of a file, for download links and the Files API: a chunk at a time, never the whole."""

CHUNK_BYTES = 64 * 1024


def read_range(path, start, length, chunk_bytes=CHUNK_BYTES):
    """Yield `length` bytes of `path` from `start` (fewer if the file is shorter), at most `chunk_bytes` at once."""
    with open(path, 'rb') as source:
        source.seek(start)
        while length > 0:
            chunk = source.read(min(chunk_bytes, length))
            if not chunk:
                break
            length -= len(chunk)
            yield chunk
