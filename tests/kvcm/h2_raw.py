"""A few raw HTTP/2 frames over a socket, for the tests that must send what a gRPC library never sends (a
request left open, a frame that breaks the protocol, a gRPC message whose length prefix lies). Header blocks are
HPACK literals without indexing or Huffman (RFC 7541 6.2.2), which any decoder accepts; replies are read as
frames, and their header blocks only searched for short literal values."""
import socket
import struct
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, GOAWAY = 0, 1, 3, 4, 7
END_STREAM, END_HEADERS, ACK = 1, 4, 1


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def _str(s):
    b = s.encode()
    assert len(b) < 127
    return bytes([len(b)]) + b


def header_block(path, extra=()):
    hs = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "127.0.0.1"),
          ("content-type", "application/grpc"), ("te", "trailers")] + list(extra)
    return b"".join(b"\x00" + _str(n) + _str(v) for n, v in hs)


def grpc_message(payload, length=None, flag=0):
    return bytes([flag]) + struct.pack(">I", len(payload) if length is None else length) + payload


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        self.closed = False
        # HEADER_TABLE_SIZE 0: the server indexes nothing, so every value it sends is a literal we can find
        self.send(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 1, 0)))

    def send(self, data):
        self.s.sendall(data)

    def frames(self, until, timeout=10.0):
        """Reads frames (type, flags, stream, payload) until until(list) is true, the peer closes, or timeout."""
        got, end = [], time.time() + timeout
        while not until(got) and time.time() < end and not self.closed:
            while len(self.buf) >= 9:
                n = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) < 9 + n:
                    break
                t, fl, sid = self.buf[3], self.buf[4], int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
                got.append((t, fl, sid, self.buf[9:9 + n]))
                if t == SETTINGS and not fl & ACK:
                    try:
                        self.send(frame(SETTINGS, ACK, 0))
                    except ConnectionError:  # the peer closed already: the frames read so far still count
                        self.closed = True
                self.buf = self.buf[9 + n:]
            if until(got):
                break
            self.s.settimeout(max(0.01, min(0.2, end - time.time())))
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                continue
            except ConnectionError:
                chunk = b""
            if not chunk:
                self.closed = True
            self.buf += chunk
        return got

    def close(self):
        self.s.close()


def stream_ended(sid):
    return lambda fs: any(f[2] == sid and f[0] in (HEADERS, DATA) and f[1] & END_STREAM for f in fs)


def header_blocks(frames, sid):
    return b"".join(f[3] for f in frames if f[2] == sid and f[0] == HEADERS)


def has_status(frames, sid, code):
    """True when a header block of the stream carries the literal value of grpc-status code."""
    v = str(code).encode()
    return bytes([len(v)]) + v in header_blocks(frames, sid)
