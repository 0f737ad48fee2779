"""Settings from environment variables, checked once at start with one line per problem."""

from __future__ import annotations

import binascii
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cryptography.fernet import Fernet
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from bot.i18n import SUPPORTED_LOCALES

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///coachbot.db"
DEFAULT_API_BASE_URL = "https://api.telegram.org"
DEFAULT_TIMEZONE = "UTC"
#: Who the bot is for (clients confirm their age before they agree), and how long someone who
#: never agreed is kept (the Telegram id, language and where they are in the question).
DEFAULT_MIN_AGE = 18
DEFAULT_CONSENT_DAYS = 7
#: Lifetimes in days of rows past their use (bot.store.Retention; docs/privacy.md), changed
#: with COACHBOT_RETENTION, e.g. "sent_messages=2,coach_events=60".
DEFAULT_RETENTION_DAYS: Mapping[str, int] = {
    "sent_messages": 1, "coach_events": 30, "finished_checkins": 60, "invites": 7,
    "ended_links": 35, "client_history": 365, "left_groups": 60}
_DATABASE_DRIVERS = ("sqlite+aiosqlite", "postgresql+asyncpg")
#: What Telegram accepts as a webhook secret_token.
_WEBHOOK_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
#: Plain http is only for a webhook on this machine (tests, a local Bot API server).
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
#: How long an outbox message whose sends keep failing (Telegram 5xx, network) is retried.
DEFAULT_SEND_GIVE_UP_HOURS = 12.0
DEFAULT_SEND_RATE = 28.0  # Telegram allows a bot about 30 messages/s in all
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class ConfigError(Exception):
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class Settings:
    telegram_token: str | None = field(default=None, repr=False)
    telegram_api_base_url: str = DEFAULT_API_BASE_URL
    database_url: str = field(default=DEFAULT_DATABASE_URL, repr=False)
    dialogues: Path = Path("dialogues")
    webhook_url: str | None = None
    webhook_secret: str | None = field(default=None, repr=False)
    admin_ids: frozenset[int] = frozenset()
    default_locale: str = "en"
    send_rate: float = DEFAULT_SEND_RATE  # messages/s for the whole bot, every replica
    send_give_up_after: timedelta = timedelta(hours=DEFAULT_SEND_GIVE_UP_HOURS)
    encryption_key: str | None = field(default=None, repr=False)
    metrics_port: int | None = None
    default_timezone: str = DEFAULT_TIMEZONE
    log_json: bool | None = None  # None: JSON lines unless stderr is a terminal
    debug_log_content: bool = False
    min_age: int = DEFAULT_MIN_AGE
    consent_days: int = DEFAULT_CONSENT_DAYS
    allow_plaintext: bool = False
    # Scheduled bulk as Telegram's paid broadcasts (a fee per message), outside send_rate.
    allow_paid_broadcast: bool = False
    retention_days: Mapping[str, int] = field(
        default_factory=lambda: dict(DEFAULT_RETENTION_DAYS))


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read the settings, or raise ConfigError listing every problem at once."""
    env = os.environ if env is None else env
    problems: list[str] = []

    def get(name: str) -> str | None:
        value = env.get(name, "").strip()
        return value or None

    database_url = get("COACHBOT_DATABASE_URL") or DEFAULT_DATABASE_URL
    problems += _check_database_url(database_url)
    dialogues = Path(get("COACHBOT_DIALOGUES") or "dialogues")
    if not dialogues.exists():
        problems.append(f"COACHBOT_DIALOGUES: {dialogues} does not exist")
    locale = get("COACHBOT_DEFAULT_LOCALE") or "en"
    if locale not in SUPPORTED_LOCALES:
        problems.append(f"COACHBOT_DEFAULT_LOCALE: '{locale}' is not one of "
                        + ", ".join(SUPPORTED_LOCALES))
    admin_ids: set[int] = set()
    for part in (get("COACHBOT_ADMIN_IDS") or "").replace(" ", "").split(","):
        if part:
            if part.lstrip("-").isdigit():
                admin_ids.add(int(part))
            else:
                problems.append(f"COACHBOT_ADMIN_IDS: '{part}' is not a Telegram user id")
    send_rate = DEFAULT_SEND_RATE
    raw_rate = get("COACHBOT_SEND_RATE")
    if raw_rate is not None:
        try:
            send_rate = float(raw_rate)
            if not 0 < send_rate <= 30:
                raise ValueError
        except ValueError:
            problems.append("COACHBOT_SEND_RATE must be a number of messages per second, "
                            "above 0 and at most 30")
    give_up_hours = DEFAULT_SEND_GIVE_UP_HOURS
    raw_give_up = get("COACHBOT_SEND_GIVE_UP_HOURS")
    if raw_give_up is not None:
        try:
            give_up_hours = float(raw_give_up)
            if not 0.1 <= give_up_hours <= 168:
                raise ValueError
        except ValueError:
            problems.append("COACHBOT_SEND_GIVE_UP_HOURS must be a number of hours from 0.1 "
                            "to 168 (how long a message Telegram keeps refusing is retried)")
    webhook_url = get("COACHBOT_WEBHOOK_URL")
    webhook_secret = get("COACHBOT_WEBHOOK_SECRET")
    if webhook_url is not None:
        problems += _check_webhook_url(webhook_url)
        if webhook_secret is None:
            problems.append("COACHBOT_WEBHOOK_SECRET must be set when COACHBOT_WEBHOOK_URL is "
                            "(1-256 characters of A-Z, a-z, 0-9, _ and -)")
    if webhook_secret is not None and not _WEBHOOK_SECRET.fullmatch(webhook_secret):
        problems.append("COACHBOT_WEBHOOK_SECRET must be 1-256 characters of A-Z, a-z, 0-9, "
                        "_ and - (Telegram's rule)")
    encryption_key = get("COACHBOT_ENCRYPTION_KEY")
    if encryption_key is not None:
        problems += _check_encryption_key(encryption_key)
    metrics_port: int | None = None
    raw_port = get("COACHBOT_METRICS_PORT")
    if raw_port is not None:
        if raw_port.isdigit() and 1 <= int(raw_port) <= 65535:
            metrics_port = int(raw_port)
        else:
            problems.append(f"COACHBOT_METRICS_PORT: '{raw_port}' is not a port number "
                            "(1-65535)")
    timezone = get("COACHBOT_DEFAULT_TIMEZONE") or DEFAULT_TIMEZONE
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        problems.append(f"COACHBOT_DEFAULT_TIMEZONE: '{timezone}' is not a known time zone "
                        "(an IANA name such as Europe/Rome or UTC)")
    log_json: bool | None = None
    log_format = (get("COACHBOT_LOG_FORMAT") or "").lower()
    if log_format in ("json", "text"):
        log_json = log_format == "json"
    elif log_format:
        problems.append(f"COACHBOT_LOG_FORMAT: '{log_format}' is not json or text")
    debug_content = False
    raw_debug = (get("COACHBOT_DEBUG_LOG_CONTENT") or "").lower()
    if raw_debug in _TRUE:
        debug_content = True
    elif raw_debug and raw_debug not in _FALSE:
        problems.append(f"COACHBOT_DEBUG_LOG_CONTENT: '{raw_debug}' is not a yes/no value "
                        "(1, true, yes or 0, false, no)")
    min_age = _int_setting(get, "COACHBOT_MIN_AGE", DEFAULT_MIN_AGE, 13, 99, "an age in "
                           "years", problems)
    consent_days = _int_setting(get, "COACHBOT_CONSENT_DAYS", DEFAULT_CONSENT_DAYS, 1, 365,
                                "a number of days", problems)
    allow_plaintext = _yes_no(get, "COACHBOT_ALLOW_PLAINTEXT", problems)
    allow_paid_broadcast = _yes_no(get, "COACHBOT_ALLOW_PAID_BROADCAST", problems)
    retention_days = dict(DEFAULT_RETENTION_DAYS)
    for part in (get("COACHBOT_RETENTION") or "").replace(" ", "").split(","):
        kind, _, days = part.partition("=")
        if not part:
            continue
        if kind in retention_days and re.fullmatch(r"[0-9]{1,4}", days) and int(days) >= 1:
            retention_days[kind] = int(days)
        else:
            problems.append(f"COACHBOT_RETENTION: '{part}' is not kind=days with a kind "
                            f"among {', '.join(DEFAULT_RETENTION_DAYS)} and days from 1")
    if problems:
        raise ConfigError(problems)
    return Settings(
        telegram_token=get("TELEGRAM_BOT_TOKEN"),
        telegram_api_base_url=get("TELEGRAM_API_BASE_URL") or DEFAULT_API_BASE_URL,
        database_url=database_url,
        dialogues=dialogues,
        webhook_url=webhook_url,
        webhook_secret=webhook_secret,
        admin_ids=frozenset(admin_ids),
        default_locale=locale,
        send_rate=send_rate,
        send_give_up_after=timedelta(hours=give_up_hours),
        encryption_key=encryption_key,
        metrics_port=metrics_port,
        default_timezone=timezone,
        log_json=log_json,
        debug_log_content=debug_content,
        min_age=min_age,
        consent_days=consent_days,
        retention_days=retention_days,
        allow_plaintext=allow_plaintext,
        allow_paid_broadcast=allow_paid_broadcast,
    )


def _yes_no(get: Callable[[str], str | None], name: str, problems: list[str]) -> bool:
    raw = (get(name) or "").lower()
    if raw and raw not in _TRUE and raw not in _FALSE:
        problems.append(f"{name}: '{raw}' is not a yes/no value "
                        "(1, true, yes or 0, false, no)")
    return raw in _TRUE


def _int_setting(get: Callable[[str], str | None], name: str, default: int, low: int,
                 high: int, what: str, problems: list[str]) -> int:
    raw = get(name)
    if raw is None:
        return default
    if re.fullmatch(r"[0-9]{1,3}", raw) and low <= int(raw) <= high:
        return int(raw)
    problems.append(f"{name}: '{raw}' is not {what} from {low} to {high}")
    return default


def _check_database_url(url: str) -> list[str]:
    """Never echo the URL: it may hold the database password."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return ["COACHBOT_DATABASE_URL is not a database URL; expected e.g. "
                "postgresql+asyncpg://user:password@host:5432/coachbot or "
                "sqlite+aiosqlite:///coachbot.db"]
    if parsed.drivername not in _DATABASE_DRIVERS:
        return [f"COACHBOT_DATABASE_URL: driver '{parsed.drivername}' is not supported; use "
                + " or ".join(_DATABASE_DRIVERS)]
    return []


def _check_webhook_url(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
    if not host:
        return [f"COACHBOT_WEBHOOK_URL: '{url}' is not a URL"]
    if parts.scheme == "https" or (parts.scheme == "http" and host in _LOCAL_HOSTS):
        return []
    return [f"COACHBOT_WEBHOOK_URL must be https:// (Telegram only posts to https; "
            f"http is allowed for 127.0.0.1 and localhost only), not '{parts.scheme}://'"]


def _check_encryption_key(key: str) -> list[str]:
    """Never echo a key; say which of the comma-separated keys is wrong."""
    keys = [k.strip() for k in key.split(",") if k.strip()]
    if not keys:
        return ["COACHBOT_ENCRYPTION_KEY holds no key"]
    bad = []
    for number, part in enumerate(keys, start=1):
        try:
            Fernet(part.encode("ascii"))
        except (ValueError, binascii.Error, UnicodeEncodeError):
            bad.append(str(number))
    if not bad:
        return []
    which = f"key {bad[0]} of {len(keys)} is not a Fernet key" if len(bad) == 1 \
        else f"keys {', '.join(bad)} of {len(keys)} are not Fernet keys"
    return [f"COACHBOT_ENCRYPTION_KEY: {which} (32 url-safe "
            "base64-encoded bytes; make one with `python -c \"from cryptography.fernet import "
            "Fernet; print(Fernet.generate_key().decode())\"`)"]
