"""Column types: aware UTC datetimes and transparently encrypted text/JSON.

Encryption is keyed per engine: :func:`install_cipher` attaches a Fernet cipher to
the engine's dialect, and the type decorators look it up there. Nothing else in
the code base ever sees ciphertext, and the key itself is never stored on any
object that gets logged or repr'd.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from sqlalchemy import DateTime, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

#: Prefix marking an encrypted value, so plaintext written before a key was
#: configured stays readable after one is configured.
ENC_PREFIX = "enc:v1:"
_CIPHER_ATTR = "_coachbot_cipher"


class DecryptionError(RuntimeError):
    """An encrypted value cannot be read: no key configured, or the wrong key."""


def split_keys(key: str | None) -> list[str]:
    """The keys of ``COACHBOT_ENCRYPTION_KEY``: one Fernet key, or several comma-separated."""
    return [k.strip() for k in (key or "").split(",") if k.strip()]


def make_cipher(key: str) -> MultiFernet:
    """Build a cipher from a Fernet key, or several comma-separated keys.

    With several keys the first one encrypts and all of them decrypt, which is
    how a key is rotated.
    """
    keys = split_keys(key)
    if not keys:
        raise ValueError("empty encryption key")
    return MultiFernet([Fernet(k.encode("ascii")) for k in keys])


_FINGERPRINT_LABEL = b"coachbot encryption key fingerprint v1"


def fingerprint(key: str) -> str:
    """A key's fingerprint: an HMAC of a fixed label under the key, which names the key
    without revealing it (64 hex digits)."""
    secret = base64.urlsafe_b64decode(key.encode("ascii"))
    return hmac.new(secret, _FINGERPRINT_LABEL, hashlib.sha256).hexdigest()


def sealed_under(stored: str, key: Fernet) -> bool:
    """Whether a value as stored is encrypted under ``key``."""
    if not stored.startswith(ENC_PREFIX):
        return False
    try:
        key.decrypt(stored[len(ENC_PREFIX):].encode("ascii"))
    except InvalidToken:
        return False
    return True


def reseal(stored: str, cipher: MultiFernet) -> str:
    """A stored value (encrypted under any of the cipher's keys, or plain text written before
    there was a key) encrypted under the cipher's first key, its timestamp kept."""
    if not stored.startswith(ENC_PREFIX):
        return ENC_PREFIX + cipher.encrypt(stored.encode("utf-8")).decode("ascii")
    try:
        token = cipher.rotate(stored[len(ENC_PREFIX):].encode("ascii"))
    except InvalidToken as exc:
        raise DecryptionError("encrypted value cannot be decrypted with this key") from exc
    return ENC_PREFIX + token.decode("ascii")


def install_cipher(dialect: Dialect, cipher: MultiFernet | None) -> None:
    """Attach ``cipher`` to an engine's dialect (each engine owns its dialect)."""
    setattr(dialect, _CIPHER_ATTR, cipher)


def _cipher(dialect: Dialect) -> MultiFernet | None:
    cipher: MultiFernet | None = getattr(dialect, _CIPHER_ATTR, None)
    return cipher


def _seal(text: str, dialect: Dialect) -> str:
    cipher = _cipher(dialect)
    if cipher is None:
        return text
    return ENC_PREFIX + cipher.encrypt(text.encode("utf-8")).decode("ascii")


def _open(stored: str, dialect: Dialect) -> str:
    if not stored.startswith(ENC_PREFIX):
        return stored
    cipher = _cipher(dialect)
    if cipher is None:
        raise DecryptionError("encrypted value found but no encryption key is configured")
    try:
        return cipher.decrypt(stored[len(ENC_PREFIX) :].encode("ascii")).decode("utf-8")
    except InvalidToken as exc:
        raise DecryptionError("encrypted value cannot be decrypted with this key") from exc


class UTCDateTime(TypeDecorator[datetime]):
    """Stores UTC, always returns timezone-aware UTC datetimes (SQLite included)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value!r}: use timezone-aware datetimes")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        # asyncpg hands every timestamptz back as an aware datetime in UTC already (whatever
        # the session's time zone): nothing to do per value, which a read of a million
        # rows (planning) notices.
        if dialect.driver == "asyncpg":
            return None
        return super().result_processor(dialect, coltype)


class EncryptedText(TypeDecorator[str]):
    """Text, encrypted at rest when the engine has a cipher installed."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        if value is None:
            return None
        return _seal(value, dialect)

    def process_result_value(self, value: str | None, dialect: Dialect) -> str | None:
        if value is None:
            return None
        return _open(value, dialect)


class EncryptedJSON(TypeDecorator[Any]):
    """A JSON document stored as text, encrypted at rest when a cipher is installed.

    SQL NULL is used for Python ``None``.
    """

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        if value is None:
            return None
        return _seal(json.dumps(value, ensure_ascii=False, separators=(",", ":")), dialect)

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        return json.loads(_open(value, dialect))


class EncryptedInt(TypeDecorator[int]):
    """A whole number the client gave (a rating), stored as text, encrypted at rest when a
    cipher is installed. Numbers written before it was encrypted stay readable."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: int | None, dialect: Dialect) -> str | None:
        if value is None:
            return None
        return _seal(str(int(value)), dialect)

    def process_result_value(self, value: str | int | None, dialect: Dialect) -> int | None:
        if value is None:
            return None
        if isinstance(value, int):  # SQLite: a number stored before
            return value
        return int(_open(value, dialect))


#: The column types stored encrypted (re-encryption finds the columns by these).
ENCRYPTED_TYPES = (EncryptedText, EncryptedJSON, EncryptedInt)


def utcnow() -> datetime:
    return datetime.now(UTC)
