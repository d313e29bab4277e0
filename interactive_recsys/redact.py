"""One redaction rule for every message that can hold a URL or storage options.

Error texts, CLI output, logs, the Studio's messages, reports and saved files never show:

* the user information of a URL that holds a password (``https://user:pass@host`` ->
  ``https://***@host``; for ``http``, ``https``, ``ftp`` and ``webhdfs`` any user
  information, since a token may stand alone there);
* the values of a URL's secret query parameters (presigned URLs: ``X-Amz-Signature``,
  ``X-Amz-Credential``, ``X-Amz-Security-Token``, ``Signature``, ``sig``, ``token``...);
* the values of storage options whose key looks secret (:func:`is_secret_key`: ``key``,
  ``secret``, ``token``, ``password``, ``credentials``, ``session``, ``signature``...), at any
  depth (``client_kwargs``, ``config_kwargs``), and every URL among the other values
  (an ``endpoint_url`` with credentials);
* the values of ``name=value`` pairs with a secret name (``AccountKey=...;``), and of
  ``'secret': '...'`` pairs of a printed mapping or JSON;
* any secret value met before by :func:`redact_options` or :func:`remember` (a store's
  error may quote the access key it was given), wherever it appears.

Each secret becomes ``MASK``. The functions never raise and return their input's type.

>>> redact_text("Cannot access 'https://ann:SECRET@h.example/x?X-Amz-Signature=abc&v=1'")
"Cannot access 'https://***@h.example/x?X-Amz-Signature=***&v=1'"
>>> redact_options({"key": "AKIA", "client_kwargs": {"endpoint_url": "http://u:p@minio:9000",
...                 "region_name": "eu"}})
{'key': '***', 'client_kwargs': {'endpoint_url': 'http://***@minio:9000', 'region_name': 'eu'}}
>>> redact_text("DefaultEndpointsProtocol=https;AccountName=a;AccountKey=c2VjcmV0")
'DefaultEndpointsProtocol=https;AccountName=a;AccountKey=***'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: What a secret is replaced with.
MASK = "***"

#: Words that make a storage option, a query parameter or a ``name=value`` pair secret
#: when its (lower-cased) name contains one.
SECRET_WORDS = ("key", "secret", "token", "password", "passwd", "pwd", "credential",
                "session", "signature", "sig", "auth", "private", "cookie",
                "connection_string", "connectionstring")

#: URL schemes where any user information (even without ``:``) is a secret.
_USERINFO_SCHEMES = ("http", "https", "ftp", "ftps", "webhdfs", "swebhdfs")

_URL = re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]*)://([^\s'\"<>`]+)")
_PAIR = re.compile(r"(?i)((?:^|(?<=[;?&\s,(]))[\w.\-]*?(?:" + "|".join(SECRET_WORDS)
                   + r")[\w.\-]*=)([^;&\s'\",)]+)")
_QUOTED = re.compile(r"""(["'])([^"'\n]{1,80})\1(\s*:\s*)(["'])((?:\\.|(?!\4).){0,4096}?)\4""")

_known: set[str] = set()  # secret values met (never printed; compared only)
_MAX_KNOWN = 1024


def is_secret_key(name: Any) -> bool:
    """Whether a storage option or query parameter named ``name`` holds a secret.

    >>> [is_secret_key(k) for k in ("secret", "aws_session_token", "X-Amz-Credential",
    ...                             "endpoint_url", "anon", "region_name")]
    [True, True, True, False, False, False]
    """
    lowered = str(name).lower()
    return any(word in lowered for word in SECRET_WORDS)


def remember(value: Any) -> None:
    """Remember the secret values inside storage options ``value`` (and URLs' passwords),
    so that :func:`redact_text` masks them wherever they appear later."""
    redact_options(value)


def _keep(secret: Any) -> None:
    if isinstance(secret, str) and len(secret) >= 8 and len(_known) < _MAX_KNOWN:
        _known.add(secret)


def redact_url(url: str) -> str:
    """``url`` with its user information and secret query values masked.

    >>> redact_url("s3://AKIA:wJalr@bucket/k")
    's3://***@bucket/k'
    >>> redact_url("abfs://container@account.dfs.core.windows.net/data")
    'abfs://container@account.dfs.core.windows.net/data'
    >>> redact_url("https://b.s3.amazonaws.com/k?X-Amz-Credential=A%2F1&X-Amz-Expires=60")
    'https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Expires=60'
    """
    match = _URL.fullmatch(url) if isinstance(url, str) else None
    if match is None:
        return url
    return _redact_match(match)


def _redact_match(match: re.Match) -> str:
    scheme, rest = match.group(1), match.group(2)
    cut = min([i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0],
              default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        userinfo, _, host = authority.rpartition("@")
        if ":" in userinfo or scheme.lower() in _USERINFO_SCHEMES:
            user, _, password = userinfo.partition(":")
            _keep(password or user)
            authority = f"{MASK}@{host}"
    path, qsep, query = tail.partition("?")
    if qsep:
        query, hsep, fragment = query.partition("#")
        pairs = []
        for pair in query.split("&"):
            name, eq, value = pair.partition("=")
            if eq and value and value != MASK and is_secret_key(name):
                _keep(value)
                value = MASK
            pairs.append(f"{name}{eq}{value}")
        tail = f"{path}?{'&'.join(pairs)}{hsep}{fragment}"
    return f"{scheme}://{authority}{tail}"


def redact_text(text: Any) -> Any:
    """``text`` with every secret masked (URLs, ``name=value`` pairs, quoted mapping entries,
    values remembered); anything not a string is returned as it is."""
    if not isinstance(text, str) or not text:
        return text
    try:
        out = _URL.sub(_redact_match, text)
        out = _PAIR.sub(lambda m: _masked_pair(m), out)
        out = _QUOTED.sub(_masked_quoted, out)
        for secret in sorted(_known, key=len, reverse=True):
            if secret in out:
                out = out.replace(secret, MASK)
        return out
    except Exception:  # never let a message fail to show; hide it whole instead
        return "(message hidden: it could not be checked for secrets)"


_PLAIN = re.compile(r"True|False|None|-?\d{1,6}")


def _masked_pair(match: re.Match) -> str:
    if match.group(2) == MASK or _PLAIN.fullmatch(match.group(2)):  # a flag, not a secret
        return match.group(0)
    _keep(match.group(2))
    return f"{match.group(1)}{MASK}"


def _masked_quoted(match: re.Match) -> str:
    quote, name, colon, vquote, value = match.groups()
    if not is_secret_key(name) or value == MASK:
        return match.group(0)
    _keep(value)
    return f"{quote}{name}{quote}{colon}{vquote}{MASK}{vquote}"


def redact_options(options: Any) -> Any:
    """A copy of storage options (any nesting of mappings and lists) with the values of
    secret keys masked and the URLs among the other values redacted; the secrets are
    remembered for :func:`redact_text`."""
    if isinstance(options, Mapping):
        out = {}
        for k, v in options.items():
            if is_secret_key(k):
                _remember_all(v)
                out[k] = MASK
            else:
                out[k] = redact_options(v)
        return out
    if isinstance(options, list | tuple):
        return type(options)(redact_options(v) for v in options)
    if isinstance(options, str):
        return redact_text(options)
    return options


def _remember_all(value: Any) -> None:
    if isinstance(value, Mapping):
        for v in value.values():
            _remember_all(v)
    elif isinstance(value, list | tuple):
        for v in value:
            _remember_all(v)
    else:
        _keep(value if isinstance(value, str) else None)


def redact_value(value: Any) -> Any:
    """``value`` (JSON-like data: a summary, a description) with every string in it, keys
    included, passed through :func:`redact_text`, for what is printed or written.

    >>> redact_value({"output": "https://u:p@h/out", "rows": [1, 2]})
    {'output': 'https://***@h/out', 'rows': [1, 2]}
    """
    if isinstance(value, Mapping):
        return {redact_text(k): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v) for v in value)
    return redact_text(value)
