"""File helpers of the download links, listOutputFiles and the Files API: path confinement, and streaming a byte
range of a file a chunk at a time, never the whole."""

import os

CHUNK_BYTES = 64 * 1024


def is_within(root, path):
    """Whether `path` is `root` or below it (both already normalised or resolved alike; no file system access)."""
    return path == root or path.startswith(root + os.sep)


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
