"""Secrets out of everything stored, logged or shown: the API key (whole or cut), credentials a
server echoes, and values of a base URL's query string."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Collection

__all__: list[str] = []


def _clip(text: str, n: int) -> str:
    """The first ``n`` characters (call it on redacted text only)."""
    return text if len(text) <= n else text[:n] + "\u2026"


class _Redactor:
    """Removes the API key from any text before it is stored, logged or shown.

    The whole key, any fragment of it of 15 characters or more (a server or proxy that cut it),
    and any ``Bearer``/``Basic`` credential are replaced by ``***``. Callers redact first and
    truncate after, so no cut can leave half a key behind.
    """

    # an Authorization value echoed back: the scheme, then a token of 12+ characters with a
    # digit (so that prose such as "a basic structure" is left alone)
    _CREDENTIAL = re.compile(r"\b(Bearer|Basic|BEARER|BASIC|bearer)(\s+)"
                             r"(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{12,}")
    _CHUNK = 8

    def __init__(self, secret: str | None) -> None:
        self.secret = secret if secret and len(secret) >= 4 else None
        s = self.secret or ""
        if len(s) >= 2 * self._CHUNK:
            offsets = list(range(0, len(s) - self._CHUNK + 1, self._CHUNK))
            if offsets[-1] != len(s) - self._CHUNK:
                offsets.append(len(s) - self._CHUNK)
            self._anchors = [(o, s[o:o + self._CHUNK]) for o in offsets]
        else:
            self._anchors = []

    def __call__(self, text: object) -> str:
        if text is None:
            return ""
        text = text if isinstance(text, str) else str(text)
        s = self.secret
        if s:
            if s in text:
                text = text.replace(s, "***")
            if self._anchors:
                text = self._fragments(text)
        if "earer" in text or "Basic" in text or "EARER" in text or "BASIC" in text:
            text = self._CREDENTIAL.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)
        return text

    def _fragments(self, text: str) -> str:
        s = self.secret or ""
        spans = []
        for off, chunk in self._anchors:
            start = text.find(chunk)
            while start >= 0:
                a, b = start, off
                while a > 0 and b > 0 and text[a - 1] == s[b - 1]:
                    a, b = a - 1, b - 1
                c, d = start + self._CHUNK, off + self._CHUNK
                while c < len(text) and d < len(s) and text[c] == s[d]:
                    c, d = c + 1, d + 1
                spans.append((a, c))
                start = text.find(chunk, start + 1)
        if not spans:
            return text
        spans.sort()
        out, pos = [], 0
        for a, c in spans:
            if c <= pos:
                continue
            out.append(text[pos:max(a, pos)])
            if a >= pos:
                out.append("***")
            pos = c
        out.append(text[pos:])
        return "".join(out)

    def also(self, secrets: Collection[str]) -> _Redactor:
        """A redactor for this secret and ``secrets`` too (e.g. a key in --base-url's query)."""
        extra = [_Redactor(s) for s in secrets if s and len(s) >= 6 and s != self.secret]
        if not extra:
            return self
        return _ChainedRedactor([self, *extra])

    def clip(self, text: object, n: int) -> str:
        """Redact, then keep the first ``n`` characters (never the other way round)."""
        if isinstance(text, str) and len(text) > 65536:
            text = text[:65536]  # far beyond n: a cut here never reaches the kept part
        return _clip(self(text), n)


class _ChainedRedactor(_Redactor):
    """Several secrets: each redactor in turn."""

    def __init__(self, parts: list[_Redactor]) -> None:
        super().__init__(None)
        self.parts = parts

    def __call__(self, text: object) -> str:
        out = "" if text is None else text if isinstance(text, str) else str(text)
        for part in self.parts:
            out = part(out)
        return out


def _query_values(url: str) -> list[str]:
    """The values of a URL's query string (an API key may travel there: Azure's api-key)."""
    return [v for _, v in urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query,
                                                  keep_blank_values=True)]
