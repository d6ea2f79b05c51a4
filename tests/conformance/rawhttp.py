"""Raw HTTP/1.1 over a socket, for tests that must see exactly when the server answers (before a
body is sent, whether `100 Continue` came first, whether the connection closes)."""

from __future__ import annotations


class _Prefixed:
    """A socket whose next `recv` first returns bytes already read."""

    def __init__(self, sock, buffered: bytes):
        self.sock, self.buffered = sock, buffered

    def settimeout(self, t):
        self.sock.settimeout(t)

    def recv(self, n):
        if self.buffered:
            b, self.buffered = self.buffered, b""
            return b
        return self.sock.recv(n)


def read_response(sock, timeout=20.0) -> tuple[int, dict, bytes]:
    """Reads one response (status, lower-cased headers, body), skipping a `100 Continue`."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {data!r}"
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    if status == 100:
        return read_response(_Prefixed(sock, rest), timeout)
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed inside the response body"
        rest += chunk
    return status, headers, rest[:length]
