"""Settings from environment variables, checked once at start with one line per problem."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bot.i18n import SUPPORTED_LOCALES

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///coachbot.db"
DEFAULT_API_BASE_URL = "https://api.telegram.org"
_DATABASE_SCHEMES = ("sqlite+aiosqlite://", "postgresql+asyncpg://")


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
    send_rate: float = 25.0
    encryption_key: str | None = field(default=None, repr=False)


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read the settings, or raise ConfigError listing every problem at once."""
    env = os.environ if env is None else env
    problems: list[str] = []

    def get(name: str) -> str | None:
        value = env.get(name, "").strip()
        return value or None

    database_url = get("COACHBOT_DATABASE_URL") or DEFAULT_DATABASE_URL
    if not database_url.startswith(_DATABASE_SCHEMES):
        problems.append("COACHBOT_DATABASE_URL must start with one of: "
                        + ", ".join(_DATABASE_SCHEMES))
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
    send_rate = 25.0
    raw_rate = get("COACHBOT_SEND_RATE")
    if raw_rate is not None:
        try:
            send_rate = float(raw_rate)
            if not 0 < send_rate <= 30:
                raise ValueError
        except ValueError:
            problems.append("COACHBOT_SEND_RATE must be a number of messages per second, "
                            "above 0 and at most 30")
    if problems:
        raise ConfigError(problems)
    return Settings(
        telegram_token=get("TELEGRAM_BOT_TOKEN"),
        telegram_api_base_url=get("TELEGRAM_API_BASE_URL") or DEFAULT_API_BASE_URL,
        database_url=database_url,
        dialogues=dialogues,
        webhook_url=get("COACHBOT_WEBHOOK_URL"),
        webhook_secret=get("COACHBOT_WEBHOOK_SECRET"),
        admin_ids=frozenset(admin_ids),
        default_locale=locale,
        send_rate=send_rate,
        encryption_key=get("COACHBOT_ENCRYPTION_KEY"),
    )
