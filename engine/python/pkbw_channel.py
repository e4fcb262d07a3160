"""The channel between PKB's Python judge and each of its workers (the candidate's process, the
reference's timing worker): one Unix socket per worker, whose messages are JSON objects (never pickle),
each framed as an 8-byte little-endian length and then that many bytes; file descriptors (memfds of host
tensors) ride on a message's first bytes as SCM_RIGHTS. Also the rule that binds a worker's life to its
judge's (PR_SET_PDEATHSIG): the judge arms it between fork and exec, the worker again at its start.
"""

import array
import ctypes
import json
import os
import signal
import socket
import struct

# Replies larger than this are refused by the judge (a flood, not an output description: tensor
# bytes travel in memfds or CUDA memory, not in messages).
MAX_MESSAGE_BYTES = 64 << 20
MAX_FDS = 8
HEADER = struct.Struct("<Q")
PR_SET_PDEATHSIG = 1


class ChannelClosed(Exception):
    """The other end closed the socket (its process ended)."""


class ProtocolError(Exception):
    """A message that breaks the channel's rules; the text says which rule."""


def die_with_parent():
    """SIGKILL when the process (thread) that started this one ends: no candidate outlives its judge."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


# Framing: an 8-byte little-endian length, then that many bytes of JSON; file descriptors (memfds of
# host tensors) ride on the message's first bytes as SCM_RIGHTS.
class Channel:
    def __init__(self, sock, limit=MAX_MESSAGE_BYTES):
        self.sock = sock
        self.limit = limit

    def fileno(self):
        return self.sock.fileno()

    def send(self, message, fds=()):
        body = json.dumps(message, allow_nan=True, separators=(",", ":")).encode()
        data = memoryview(HEADER.pack(len(body)) + body)
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        sent = self.sock.sendmsg([data], ancillary)
        if sent < len(data):
            self.sock.sendall(data[sent:])

    def _read(self, count, fds):
        chunks, got = [], 0
        while got < count:
            if fds is not None:
                data, received, flags, _ = socket.recv_fds(self.sock, count - got, MAX_FDS)
                fds.extend(received)
                if flags & socket.MSG_CTRUNC:
                    raise ProtocolError(f"more than {MAX_FDS} file descriptors on one message")
            else:
                data = self.sock.recv(min(count - got, 1 << 20))
            if not data:
                raise ChannelClosed()
            chunks.append(data)
            got += len(data)
        return b"".join(chunks)

    def recv(self):
        """(message, fds). The caller owns the fds (and must close those it does not keep)."""
        fds = []
        try:
            (length,) = HEADER.unpack(self._read(HEADER.size, fds))
            if length > self.limit:
                raise ProtocolError(f"a message of {length} bytes (the limit is {self.limit})")
            body = self._read(length, None)
            try:
                message = json.loads(body)
            except (ValueError, RecursionError) as error:
                raise ProtocolError(f"a message that is not JSON: {error}") from None
            if not isinstance(message, dict):
                raise ProtocolError("a message that is not a JSON object")
            return message, fds
        except BaseException:
            close_fds(fds)
            raise


def close_fds(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
