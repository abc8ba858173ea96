"""The HTTP/1.1 client of `storyeval.llm.backends.OpenAIBackend`: a small keep-alive connection
pool on asyncio streams (direct, or through an ``http://`` proxy from the environment), the TLS
context, and the checks that say whether a response can be the answer to its request.

What a response proves (see ``docs/llm.md``, "Answers matched to their requests"):

* on a connection of its own (``reuse=False``: the request says ``Connection: close``), a
  response followed by the server's close with no byte after it is the only response the server
  sent on that connection, for the only request written on it (`_Reply.alone`);
* on a kept-alive connection nothing is proved by the connection: the caller accepts such a
  response only when it echoes the request's nonce.

A response is read only after its request is fully written; bytes found on an idle connection
(before a request is written on it) or after a complete response close that connection.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import select
import socket
import ssl
import typing
import urllib.parse
import urllib.request
from typing import Any

from storyeval.exceptions import InputError

logger = logging.getLogger("storyeval.llm")

#: Seconds a server may take to close a connection after answering a ``Connection: close``
#: request; a server that keeps it open longer gives an answer that cannot be verified.
_CLOSE_GRACE = 2.0
#: Seconds a first TLS handshake with a server may take before the scheme is questioned (a
#: silent peer): then a plain HTTP probe (at most ``_PROBE_WAIT`` s) names the mistake.
_HANDSHAKE_WAIT = 5.0
_PROBE_WAIT = 2.0


def make_ssl_context(ca_bundle: str | os.PathLike | None = None) -> ssl.SSLContext:
    """The TLS context of https servers: the CA file or folder ``ca_bundle`` (``--ca-bundle``),
    else ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` from the environment, else certifi's bundle (the
    system's store without certifi). A folder holds certificates under OpenSSL's hashed names
    (``openssl rehash DIR``)."""
    def checked(path: str, what: str) -> tuple[str | None, str | None]:
        if not os.path.exists(path):
            raise InputError(f"{what} {path!r} does not exist")
        return (None, path) if os.path.isdir(path) else (path, None)

    if ca_bundle is not None:
        cafile, capath = checked(os.fspath(ca_bundle), "--ca-bundle")
    else:
        env_file = os.environ.get("SSL_CERT_FILE", "").strip()
        env_dir = os.environ.get("SSL_CERT_DIR", "").strip()
        cafile = checked(env_file, "SSL_CERT_FILE")[0] if env_file else None
        capath = checked(env_dir, "SSL_CERT_DIR")[1] if env_dir else None
        if not (cafile or capath):
            try:
                import certifi
            except ImportError:
                return ssl.create_default_context()
            cafile = certifi.where()
    try:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    except (ssl.SSLError, OSError) as exc:
        raise InputError(f"cannot read the CA certificates {cafile or capath!r}: {exc}") from None



def _proxy_for(url: str) -> str | None:
    """The proxy from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, with
    ``NO_PROXY``) through which ``url`` would go, or None."""
    try:
        proxies = urllib.request.getproxies()
        parts = urllib.parse.urlsplit(url)
        proxy = proxies.get(parts.scheme) or proxies.get("all")
        if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
            return None
        return proxy if "://" in proxy else f"http://{proxy}"
    except Exception:  # noqa: BLE001 - an odd proxy setting: let httpx decide
        return os.environ.get("ALL_PROXY") or os.environ.get("all_proxy") or "unknown://"


def _uses_proxy(url: str) -> bool:
    """Whether requests to ``url`` go through a proxy from the environment."""
    return _proxy_for(url) is not None


class _Reply(typing.NamedTuple):
    """A response; ``alone``: it came on a connection of its own that the server closed right
    after it, with no byte beyond it (the only response to the only request on it); ``others``:
    the bodies of further responses that came on that connection (remembered by the caller, so
    that a later replay of one of them is recognised)."""

    status: int
    headers: dict[str, str]
    body: bytes
    alone: bool
    others: tuple[bytes, ...] = ()


class _TransportFailure(Exception):
    """A request that got no HTTP response: ``kind`` is "timeout" or "connection" (retried), or
    "tls" or "dns" (a misconfiguration no retry can fix)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _tls_message(exc: BaseException, origin: tuple) -> str:
    """One line for a certificate the client refused."""
    reason = getattr(exc, "verify_message", None) or getattr(exc, "reason", None) or str(exc)
    return (f"TLS certificate verification failed for {origin[1]}:{origin[2]} ({reason}); "
            "give the server's CA with --ca-bundle FILE (or SSL_CERT_FILE / SSL_CERT_DIR)")


def _tls_mismatch(exc: BaseException, origin: tuple) -> str:
    """One line for a TLS handshake that failed for another reason than the certificate; the
    usual one is ``https://`` to a server that speaks plain HTTP (``WRONG_VERSION_NUMBER``)."""
    reason = getattr(exc, "reason", None) or str(exc)
    hint = ("the server does not speak TLS: use http:// in --base-url"
            if "WRONG_VERSION_NUMBER" in str(exc) or "wrong version" in str(exc).lower()
            else "check that the server speaks https on this port")
    return f"TLS handshake with {origin[1]}:{origin[2]} failed ({reason}); {hint}"


def _decode_body(body: bytes, headers: dict[str, str]) -> bytes:
    """The body without a gzip/deflate content encoding (storyeval asks for none)."""
    encoding = headers.get("content-encoding", "").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        import zlib

        wbits = 31 if "gzip" in encoding else 15
        try:
            return zlib.decompress(body, wbits)
        except zlib.error:
            return zlib.decompress(body, -15) if encoding == "deflate" else body
    return body


class _ProtocolError(Exception):
    """The server's answer is not HTTP/1.1 as storyeval reads it."""


class _SpeaksTLS(Exception):
    """A plain-HTTP request was answered with a TLS record: ``http://`` to an https server."""


#: Largest response body read (a chat completion is a few kB).
_MAX_BODY = 64 * 2**20


def _kernel_unread(writer) -> str | None:
    """What the kernel holds for this connection that asyncio has not read yet: None (nothing),
    "eof" (the peer closed it), "bytes" (data), or "unknown" (TLS: encrypted bytes may be a
    close notification; the connection is not reused either way)."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        return None
    try:
        fd = sock.fileno()
        if fd < 0:
            return "eof"
        if hasattr(select, "poll"):  # select() cannot watch descriptors past 1024
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLPRI)
            if not poller.poll(0):
                return None
        elif not select.select([fd], [], [], 0)[0]:
            return None
        if writer.get_extra_info("sslcontext") is not None:
            return "unknown"
        with socket.socket(fileno=os.dup(fd)) as peek:
            return "bytes" if peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) else "eof"
    except (OSError, ValueError, AttributeError):
        return "unknown"  # cannot tell: not clean




class _Connection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader, writer) -> None:
        self.reader, self.writer = reader, writer

    def unread(self, *, kernel: bool = True) -> str | None:
        """Whatever was received beyond the responses read so far: None on a clean HTTP/1.1
        connection between requests; "bytes" for stray data; "eof" or "unknown" otherwise.
        ``kernel=False`` looks only at what asyncio has read (no system call)."""
        if getattr(self.reader, "_buffer", None):
            return "bytes"
        if self.writer.is_closing() or self.reader.at_eof():
            return "eof"
        return _kernel_unread(self.writer) if kernel else None

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a broken transport
            self.writer.close()


class _ConnectionPool:
    """One HTTP/1.1 connection pool shared by every worker, on asyncio streams.

    The requests are always the same shape (a JSON POST to one URL), so the client is small: it
    writes the request in one piece and reads the status line, the headers and a body framed by
    ``Content-Length``, chunked transfer coding or the end of the connection (gzip/deflate
    decoded). At most ``max_connections`` requests are in flight; an idle kept-alive connection
    is taken from a stack in O(1). A request costs about a tenth of the CPU of an
    ``httpx.AsyncClient`` request, which is what lets one process keep hundreds of requests in
    flight. One SSL context is built, once, and shared. ``timeout`` bounds each request
    (sending, waiting, reading); a connection that timed out or failed is closed, never reused.

    `post` with ``reuse=False`` opens a connection for the request alone, says
    ``Connection: close`` and, after the response, waits (at most ``_CLOSE_GRACE`` s) for the
    server's close: `_Reply.alone` is True when nothing came between the response and the close.
    With ``reuse=True`` (and ``keep_alive``) an idle connection is reused when nothing was
    received on it since its last response (the stream's buffer and end-of-file flag, then the
    kernel's, by a poll with a zero timeout), and the connection goes back to the stack when
    nothing follows the response; no rest, no timer. A request written on a reused connection
    that the server closed meanwhile (no response byte came back) is written once more on a
    new connection: it has the same nonce, so at most one response to it is ever read.

    ``proxy`` (``http://[user:password@]host:port``): requests go through that proxy, on
    connections of their own to it (absolute-form request targets for ``http://`` servers, a
    ``CONNECT`` tunnel and TLS inside it for ``https://`` ones), with the same checks.

    TLS: the TCP connection and the TLS handshake are timed apart; on first contact with a
    server, a handshake without an answer within ``_HANDSHAKE_WAIT`` s, or a connection closed
    during the handshake, is a one-line error naming the likely mistake (a plain HTTP probe
    says whether the server speaks plain HTTP); a plain request closed without a response on
    first contact is checked with a TLS probe (``http://`` to a TLS server).
    """

    def __init__(self, max_connections: int, timeout: float, connect_timeout: float,
                 headers: dict[str, str], ssl_context: ssl.SSLContext | None = None, *,
                 keep_alive: bool = True, proxy: str | None = None) -> None:
        for k, v in headers.items():
            if any(c in f"{k}{v}" for c in "\r\n\0"):
                raise InputError(f"HTTP header {k} holds a line break or NUL character")
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[tuple, list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self._ssl = ssl_context
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self._targets: dict[str, tuple[tuple, str]] = {}
        self._keep_alive = keep_alive
        self._max = max_connections
        self._proxy: tuple[str, int, str] | None = None
        if proxy is not None:
            p = urllib.parse.urlsplit(proxy)
            auth = ""
            if p.username is not None:
                cred = f"{urllib.parse.unquote(p.username)}:{urllib.parse.unquote(p.password or '')}"
                auth = f"Proxy-Authorization: Basic {base64.b64encode(cred.encode()).decode()}\r\n"
            self._proxy = (p.hostname or "", p.port or 80, auth)
        #: origins that answered once (a response, or a finished TLS handshake)
        self._contact: set[tuple] = set()
        self._probes: dict[tuple, Any] = {}
        self._noted: set[tuple[tuple, str]] = set()

    def _target(self, url: str) -> tuple[tuple, str]:
        got = self._targets.get(url)
        if got is None:
            parts = urllib.parse.urlsplit(url)
            host = parts.hostname or ""
            port = parts.port or (443 if parts.scheme == "https" else 80)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            netloc = parts.netloc.rsplit("@", 1)[-1].encode("idna").decode("ascii")
            target = urllib.parse.quote(path, safe="/?&=%:@!$,;+*()~")
            extra = ""
            if self._proxy is not None and parts.scheme == "http":
                target = f"http://{netloc}{target}"  # absolute form, to the proxy
                extra = self._proxy[2]
            prefix = f"POST {target} HTTP/1.1\r\nHost: {netloc}\r\n{extra}{self._fixed}"
            got = ((parts.scheme, host, port), prefix)
            self._targets[url] = got
        return got

    def _ssl_context(self):
        if self._ssl is None:
            self._ssl = make_ssl_context()
        return self._ssl

    def _note(self, origin: tuple, what: str) -> None:
        """Log, once per server and kind, a connection closed for something the server did."""
        if (origin, what) not in self._noted:
            self._noted.add((origin, what))
            logger.warning("the server %s://%s:%s %s; that connection is closed", *origin, what)

    async def _tcp(self, host: str, port: int) -> _Connection:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, limit=2**18), self._connect_timeout)
        conn = _Connection(reader, writer)
        self._open.add(conn)
        return conn

    async def _connect(self, origin: tuple) -> _Connection:
        scheme, host, port = origin
        if self._proxy is None:
            conn = await self._tcp(host, port)
        else:
            conn = await self._tcp(self._proxy[0], self._proxy[1])
            if scheme == "https":
                await self._tunnel(conn, origin)
        if scheme == "https":
            await self._handshake(conn, origin)
        return conn

    async def _tunnel(self, conn: _Connection, origin: tuple) -> None:
        """``CONNECT host:port`` through the proxy; the proxy's refusal is one line."""
        _, host, port = origin
        assert self._proxy is not None  # noqa: S101 - only called with a proxy
        phost, pport, auth = self._proxy
        conn.writer.write(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                          f"{auth}\r\n".encode("latin-1"))
        line = await asyncio.wait_for(conn.reader.readline(), self._connect_timeout)
        parts = line.split(None, 2)
        while (await asyncio.wait_for(conn.reader.readline(), self._connect_timeout)) \
                not in (b"\r\n", b"\n", b""):
            pass
        if len(parts) < 2 or parts[1] != b"200":
            status = parts[1].decode("latin-1", "replace") if len(parts) > 1 else "no answer"
            kind = "tls" if status in ("403", "407") else "connection"
            raise _TransportFailure(kind, f"the proxy {phost}:{pport} refused "
                                          f"the tunnel to {host}:{port} (HTTP {status})")

    async def _handshake(self, conn: _Connection, origin: tuple) -> None:
        """TLS on an open connection, with the first-contact diagnosis of a wrong scheme."""
        _, host, port = origin
        first = origin not in self._contact
        wait = min(self._connect_timeout, _HANDSHAKE_WAIT) if first else self._connect_timeout
        try:
            await asyncio.wait_for(conn.writer.start_tls(self._ssl_context(),
                                                         server_hostname=host), wait)
        except TimeoutError:
            if not first:
                raise _TransportFailure("timeout", "ConnectTimeout (TLS handshake)") from None
            raise _TransportFailure("tls", await self._wrong_scheme(
                origin, f"no answer to the TLS handshake within {wait:g} s")) from None
        except ssl.SSLCertVerificationError:
            raise
        except ssl.SSLError as exc:
            if first and not ("WRONG_VERSION_NUMBER" in str(exc)
                              or "wrong version" in str(exc).lower()):
                raise _TransportFailure("tls", await self._wrong_scheme(
                    origin, f"the TLS handshake failed ({getattr(exc, 'reason', None) or exc})")
                ) from None
            raise
        except (ConnectionError, EOFError, asyncio.IncompleteReadError):
            if not first:
                raise
            raise _TransportFailure("tls", await self._wrong_scheme(
                origin, "the server closed the connection during the TLS handshake")) from None
        self._contact.add(origin)

    async def _wrong_scheme(self, origin: tuple, what: str) -> str:
        """One line for an ``https://`` server that did not complete a first handshake: whether
        it answers plain HTTP (then ``http://`` is meant)."""
        _, host, port = origin
        plain = self._proxy is None and await _answers_plain_http(host, port)
        hint = ("it answers plain HTTP: use http:// in --base-url" if plain else
                "it answered neither TLS nor a plain HTTP request: check the port and that the "
                "server speaks https")
        return f"TLS handshake with {host}:{port}: {what}; {hint}"

    async def _speaks_tls(self, origin: tuple) -> bool:
        """Whether the server of an ``http://`` origin answers a TLS handshake (probed once)."""
        task = self._probes.get(origin)
        if task is None:
            task = self._probes[origin] = asyncio.ensure_future(
                _answers_tls(origin[1], origin[2]))
        return await asyncio.shield(task)

    def _trim(self) -> None:
        """Close idle connections beyond ``max_connections`` open ones."""
        for idle in self._idle.values():
            while idle and len(self._open) >= self._max:
                self._discard(idle.pop(0))

    def _discard(self, conn: _Connection) -> None:
        self._open.discard(conn)
        conn.close()

    async def post(self, url: str, body: bytes, extra: dict[str, str], *,
                   reuse: bool = True) -> _Reply:
        origin, prefix = self._target(url)
        reuse = reuse and self._keep_alive
        head = prefix + "".join(f"{k}: {v}\r\n" for k, v in extra.items()) + \
            ("" if reuse else "Connection: close\r\n") + f"Content-Length: {len(body)}\r\n\r\n"
        message = head.encode("latin-1") + body
        await self._slots.acquire()
        conn = None
        stage = "connect"
        try:
            reused = False
            idle = self._idle.get(origin) if reuse else None
            while idle:
                c = idle.pop()
                left = c.unread()
                if left is None:
                    conn, reused = c, True
                    break
                if left == "bytes":
                    self._note(origin, "sent bytes on an idle kept-alive connection")
                self._discard(c)
            if conn is None:
                self._trim()
                conn = await self._connect(origin)
            stage = "read"
            try:
                async with asyncio.timeout(self._timeout):  # no task of its own
                    status, headers, data, keep = await self._exchange(conn, message)
            except _NoResponse:
                if not reused:
                    if (origin[0] == "http" and self._proxy is None
                            and origin not in self._contact and await self._speaks_tls(origin)):
                        raise _SpeaksTLS(
                            f"{origin[1]}:{origin[2]} closed the connection without an HTTP "
                            "response and answers a TLS handshake: use https:// in --base-url "
                            "(no retry can fix this)") from None
                    raise
                # a kept-alive connection the server closed as we sent: the request never
                # reached it, so it is sent once more on a new connection
                self._discard(conn)
                conn, reused = None, False
                stage = "connect"
                conn = await self._connect(origin)
                stage = "read"
                async with asyncio.timeout(self._timeout):
                    status, headers, data, keep = await self._exchange(conn, message)
            self._contact.add(origin)
            alone = False
            others: tuple[bytes, ...] = ()
            if not reuse:
                alone, others = await self._closed_after(conn, origin, keep)
            elif keep:
                # what asyncio read with the response; the kernel is asked (a poll with no
                # wait) when the connection is taken for the next request
                left = conn.unread(kernel=False)
                if left is None:
                    self._idle.setdefault(origin, []).append(conn)
                    conn = None  # back to the stack, reused by the next request
                elif left == "bytes":
                    self._note(origin, "sent bytes after a complete response")
        except _TransportFailure:
            raise
        except TimeoutError:
            what = ("ConnectTimeout" if stage == "connect" else "ReadTimeout")
            raise _TransportFailure("timeout", what) from None
        except ssl.SSLCertVerificationError as exc:
            raise _TransportFailure("tls", _tls_message(exc, origin)) from None
        except ssl.SSLError as exc:
            raise _TransportFailure("tls", _tls_mismatch(exc, origin)) from None
        except _SpeaksTLS as exc:
            raise _TransportFailure("tls", str(exc)) from None
        except socket.gaierror as exc:
            raise _TransportFailure("dns", f"cannot resolve host {origin[1]!r}: "
                                           f"{exc.strerror or exc}") from None
        except _ProtocolError as exc:
            raise _TransportFailure("connection", f"{type(exc).__name__}: {exc}") from None
        except (OSError, EOFError, ValueError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError) as exc:
            raise _TransportFailure("connection", f"{type(exc).__name__}: {exc}") from None
        finally:
            if conn is not None:  # a connection of one request, or failed: never reused
                self._discard(conn)
            self._slots.release()
        return _Reply(status, headers, _decode_body(data, headers), alone, others)

    async def _closed_after(self, conn: _Connection, origin: tuple,
                            keep: bool) -> tuple[bool, tuple[bytes, ...]]:
        """After the response to a ``Connection: close`` request: (True, ()) when the server
        closed the connection (within ``_CLOSE_GRACE`` s) without sending another response;
        else (False, the bodies of the further responses found). Bytes that cannot begin an
        HTTP response (junk) are not a response and leave the answer alone."""
        reader = conn.reader
        extra = b""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _CLOSE_GRACE
        while not reader.at_eof() and len(extra) < 2**20:
            try:
                more = await asyncio.wait_for(reader.read(2**16), deadline - loop.time())
            except TimeoutError:
                self._note(origin, f"kept the connection open {_CLOSE_GRACE:g} s after "
                                   "answering a 'Connection: close' request")
                return False, _bodies_in(extra)
            except (OSError, EOFError, ssl.SSLError):
                break  # reset: nothing more came
            if not more:
                break
            extra += more
        if not extra:
            return True, ()
        head = extra.lstrip(b"\r\n")
        if b"HTTP/" in extra or b"HTTP/".startswith(head[:5]):
            self._note(origin, "sent another response after a complete response on a connection "
                               "of one request, so neither can be shown to answer it (asked "
                               "again)")
            return False, _bodies_in(extra)
        self._note(origin, "sent bytes that are no HTTP response after a complete response (the "
                           "response stays the only one on its connection)")
        return True, ()

    async def _exchange(self, conn: _Connection, message: bytes
                        ) -> tuple[int, dict[str, str], bytes, bool]:
        reader, writer = conn.reader, conn.writer
        try:
            writer.write(message)
            await writer.drain()
            line = await reader.readline()
        except ConnectionError as exc:  # reset, aborted, broken pipe: no response byte came
            raise _NoResponse(str(exc)) from None
        if not line:
            raise _NoResponse("the server closed the connection without a response")
        while True:
            parts = line.split(None, 2)
            if line[:1] in (b"\x15", b"\x16") and line[1:2] == b"\x03":
                raise _SpeaksTLS("the server answered with TLS: use https:// in --base-url "
                                 "(no retry can fix this)")
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
                raise _ProtocolError(f"not an HTTP/1.x status line: {line[:40]!r}")
            version, status = parts[0], int(parts[1])
            headers: dict[str, str] = {}
            for _ in range(256):
                h = await reader.readline()
                if h in (b"\r\n", b"\n"):
                    break
                if not h.endswith(b"\n"):
                    raise _ProtocolError("the connection closed in the response headers")
                k, sep, v = h.partition(b":")
                if not sep:
                    raise _ProtocolError(f"malformed header line {h[:40]!r}")
                key = k.strip().decode("latin-1").lower()
                val = v.strip().decode("latin-1")
                headers[key] = f"{headers[key]}, {val}" if key in headers else val
            else:
                raise _ProtocolError("more than 256 response headers")
            if 100 <= status < 200:  # informational; the response follows
                line = await reader.readline()
                if not line:
                    raise _ProtocolError("the connection closed after a 1xx response")
                continue
            break
        keep = version == b"HTTP/1.1" and "close" not in headers.get("connection", "").lower()
        if status in (204, 304):
            return status, headers, b"", keep
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return status, headers, await self._read_chunked(reader), keep
        if "content-length" in headers:
            n = int(headers["content-length"])
            if not 0 <= n <= _MAX_BODY:
                raise _ProtocolError(f"Content-Length {n} out of range")
            return status, headers, await reader.readexactly(n), keep
        chunks, total = [], 0  # delimited by the end of the connection
        while True:
            part = await reader.read(2**16)
            if not part:
                break
            total += len(part)
            if total > _MAX_BODY:
                raise _ProtocolError("response body too large")
            chunks.append(part)
        return status, headers, b"".join(chunks), False

    @staticmethod
    async def _read_chunked(reader) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            line = await reader.readline()
            if not line.endswith(b"\n"):
                raise _ProtocolError("the connection closed in a chunked body")
            size = int(line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                for _ in range(256):  # trailers up to the blank line
                    t = await reader.readline()
                    if t in (b"\r\n", b"\n", b""):
                        break
                return b"".join(chunks)
            total += size
            if total > _MAX_BODY:
                raise _ProtocolError("response body too large")
            chunks.append(await reader.readexactly(size))
            if (await reader.readline()).strip():
                raise _ProtocolError("malformed chunk end")

    async def aclose(self) -> None:
        conns, self._open = list(self._open), set()
        self._idle.clear()
        for c in conns:
            c.close()
        for task in self._probes.values():
            task.cancel()


def _bodies_in(data: bytes) -> tuple[bytes, ...]:
    """The bodies of the ``Content-Length`` framed responses in ``data`` (stray responses)."""
    out = []
    for part in data.split(b"HTTP/1.")[1:]:
        head, sep, rest = part.partition(b"\r\n\r\n")
        length = next((int(v) for k, _, v in (h.partition(b":") for h in head.split(b"\r\n"))
                       if k.strip().lower() == b"content-length" and v.strip().isdigit()), None)
        if sep and length is not None and len(rest) >= length:
            out.append(rest[:length])
    return tuple(out)


async def _answers_plain_http(host: str, port: int) -> bool:
    """Whether ``host:port`` answers a plain HTTP request with an HTTP status line."""
    writer = None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), _PROBE_WAIT)
        writer.write(f"HEAD / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        line = await asyncio.wait_for(reader.readline(), _PROBE_WAIT)
        return line.startswith(b"HTTP/")
    except (OSError, TimeoutError, ValueError, EOFError):
        return False
    finally:
        if writer is not None:
            writer.close()


async def _answers_tls(host: str, port: int) -> bool:
    """Whether ``host:port`` answers a TLS handshake (any certificate; only the protocol is
    probed, nothing is sent after it)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    writer = None
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=ctx),
                                           _PROBE_WAIT)
        return True
    except ssl.SSLError as exc:
        return "ALERT" in str(exc).upper()  # an alert is TLS too (e.g. a client certificate)
    except (OSError, TimeoutError, ValueError, EOFError):
        return False
    finally:
        if writer is not None:
            writer.close()


class _NoResponse(_ProtocolError):
    """Nothing came back on a connection (the server closed it as the request was sent)."""


class _HttpxSender:
    """Requests through ``httpx.AsyncClient``, for a proxy the own pool does not speak (SOCKS,
    an ``https://`` proxy), one connection per request. httpx does not show what follows a
    response on its connection, so no reply is `_Reply.alone`: through such a proxy only
    answers that echo their request's nonce are accepted."""

    def __init__(self, max_connections: int, timeout: float, connect_timeout: float,
                 headers: dict[str, str], ssl_context: ssl.SSLContext | None = None, *,
                 keep_alive: bool = True, proxy: str | None = None) -> None:
        import httpx

        self._client = httpx.AsyncClient(
            headers={**headers, "Connection": "close"},
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            verify=ssl_context if ssl_context is not None else make_ssl_context(),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=0))

    async def post(self, url: str, body: bytes, extra: dict[str, str], *,
                   reuse: bool = True) -> _Reply:
        import httpx

        try:
            resp = await self._client.post(url, content=body, headers=extra)
        except httpx.TimeoutException as exc:
            raise _TransportFailure("timeout", type(exc).__name__) from None
        except httpx.TransportError as exc:
            cause = exc.__cause__ or exc.__context__
            origin = (None, *(urllib.parse.urlsplit(url).hostname, urllib.parse.urlsplit(url).port))
            if isinstance(cause, ssl.SSLCertVerificationError) or \
                    "CERTIFICATE_VERIFY_FAILED" in str(exc):
                raise _TransportFailure("tls", _tls_message(cause or exc, origin)) from None
            if isinstance(cause, ssl.SSLError) or "WRONG_VERSION_NUMBER" in str(exc):
                raise _TransportFailure("tls", _tls_mismatch(cause or exc, origin)) from None
            if isinstance(cause, socket.gaierror):
                raise _TransportFailure("dns", f"cannot resolve host {origin[1]!r}: "
                                               f"{cause.strerror or cause}") from None
            raise _TransportFailure("connection", f"{type(exc).__name__}: {exc}") from None
        return _Reply(resp.status_code, {k.lower(): v for k, v in resp.headers.items()},
                      resp.content, False)

    async def aclose(self) -> None:
        await self._client.aclose()
