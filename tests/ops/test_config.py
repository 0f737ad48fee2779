"""Settings are checked at start: one clear line per problem, every problem at once."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from bot.config import ConfigError, Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]
KEY = Fernet.generate_key().decode()
OK_WEBHOOK = {"COACHBOT_WEBHOOK_URL": "https://bot.example.org/telegram",
              "COACHBOT_WEBHOOK_SECRET": "s3cret_-X"}


def settings(**env: str) -> Settings:
    return load_settings({"COACHBOT_DIALOGUES": str(ROOT / "dialogues"), **env})


def problems(**env: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        settings(**env)
    for line in caught.value.problems:
        assert "\n" not in line and line.strip() == line and line
    return caught.value.problems


def test_defaults() -> None:
    s = settings()
    assert s.metrics_port is None and s.default_timezone == "UTC"
    assert s.log_json is None and s.debug_log_content is False


def test_good_values_are_read() -> None:
    s = settings(COACHBOT_DATABASE_URL="postgresql+asyncpg://u:p%40ss@db:5432/coachbot",
                 COACHBOT_ENCRYPTION_KEY=f"{KEY}, {Fernet.generate_key().decode()}",
                 COACHBOT_METRICS_PORT="9090", COACHBOT_DEFAULT_TIMEZONE="Europe/Zagreb",
                 COACHBOT_LOG_FORMAT="JSON", COACHBOT_DEBUG_LOG_CONTENT="yes", **OK_WEBHOOK)
    assert (s.metrics_port, s.default_timezone, s.log_json, s.debug_log_content) \
        == (9090, "Europe/Zagreb", True, True)
    assert s.webhook_secret == "s3cret_-X"
    assert settings(COACHBOT_WEBHOOK_URL="http://127.0.0.1:8443/hook",
                    COACHBOT_WEBHOOK_SECRET="x").webhook_url == "http://127.0.0.1:8443/hook"
    assert settings(COACHBOT_WEBHOOK_URL="http://localhost/hook",
                    COACHBOT_WEBHOOK_SECRET="x").webhook_secret == "x"


@pytest.mark.parametrize(("env", "expected"), [
    ({"COACHBOT_DATABASE_URL": "not a url"}, "COACHBOT_DATABASE_URL is not a database URL"),
    ({"COACHBOT_DATABASE_URL": "postgresql://u:hunter2@db/x"}, "driver 'postgresql'"),
    ({"COACHBOT_DATABASE_URL": "mysql+aiomysql://u@db/x"}, "driver 'mysql+aiomysql'"),
    ({"COACHBOT_WEBHOOK_URL": "http://bot.example.org/hook",
      "COACHBOT_WEBHOOK_SECRET": "x"}, "COACHBOT_WEBHOOK_URL must be https://"),
    ({"COACHBOT_WEBHOOK_URL": "bot.example.org",
      "COACHBOT_WEBHOOK_SECRET": "x"}, "COACHBOT_WEBHOOK_URL: 'bot.example.org' is not a URL"),
    ({"COACHBOT_WEBHOOK_URL": "https://bot.example.org/hook"},
     "COACHBOT_WEBHOOK_SECRET must be set"),
    ({"COACHBOT_WEBHOOK_SECRET": "has space"}, "COACHBOT_WEBHOOK_SECRET must be 1-256"),
    ({"COACHBOT_WEBHOOK_SECRET": "x" * 257}, "COACHBOT_WEBHOOK_SECRET must be 1-256"),
    ({"COACHBOT_ENCRYPTION_KEY": "not-a-key"}, "key 1 of 1 is not a Fernet key"),
    ({"COACHBOT_ENCRYPTION_KEY": f"{KEY},nope"}, "key 2 of 2 is not a Fernet key"),
    ({"COACHBOT_ENCRYPTION_KEY": "a,b"}, "keys 1, 2 of 2 are not Fernet keys"),
    ({"COACHBOT_METRICS_PORT": "http"}, "COACHBOT_METRICS_PORT: 'http' is not a port"),
    ({"COACHBOT_METRICS_PORT": "0"}, "COACHBOT_METRICS_PORT: '0' is not a port"),
    ({"COACHBOT_METRICS_PORT": "65536"}, "COACHBOT_METRICS_PORT: '65536' is not a port"),
    ({"COACHBOT_DEFAULT_TIMEZONE": "Europe/Atlantis"}, "'Europe/Atlantis' is not a known"),
    ({"COACHBOT_DEFAULT_TIMEZONE": "../../etc/passwd"}, "is not a known time zone"),
    ({"COACHBOT_LOG_FORMAT": "xml"}, "COACHBOT_LOG_FORMAT: 'xml' is not json or text"),
    ({"COACHBOT_DEBUG_LOG_CONTENT": "maybe"}, "COACHBOT_DEBUG_LOG_CONTENT: 'maybe'"),
])
def test_each_problem_is_exactly_one_line(env: dict[str, str], expected: str) -> None:
    (line,) = problems(**env)
    assert expected in line


def test_secrets_are_never_echoed() -> None:
    lines = problems(COACHBOT_DATABASE_URL="postgresql://u:hunter2@db/x",
                     COACHBOT_ENCRYPTION_KEY="sUpErSeCrEt")
    assert not any("hunter2" in line or "sUpErSeCrEt" in line for line in lines)


def test_every_problem_is_reported_at_once() -> None:
    lines = problems(COACHBOT_DATABASE_URL="mysql://x", COACHBOT_WEBHOOK_URL="ftp://x/y",
                     COACHBOT_ENCRYPTION_KEY="bad", COACHBOT_METRICS_PORT="-1",
                     COACHBOT_DEFAULT_TIMEZONE="Nowhere", COACHBOT_SEND_RATE="99")
    assert [line.split(":")[0].split(" ")[0] for line in lines] == [
        "COACHBOT_DATABASE_URL", "COACHBOT_SEND_RATE", "COACHBOT_WEBHOOK_URL",
        "COACHBOT_WEBHOOK_SECRET", "COACHBOT_ENCRYPTION_KEY", "COACHBOT_METRICS_PORT",
        "COACHBOT_DEFAULT_TIMEZONE"]


def test_run_with_bad_settings_exits_2_with_the_lines_and_no_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COACHBOT_", "TELEGRAM_"))}
    env.update(COACHBOT_DIALOGUES=str(ROOT / "dialogues"), TELEGRAM_BOT_TOKEN="1:x",
               COACHBOT_METRICS_PORT="nine", COACHBOT_DEFAULT_TIMEZONE="Mars/Olympus",
               COACHBOT_WEBHOOK_URL="http://bot.example.org/hook")
    result = subprocess.run([sys.executable, "-m", "bot.cli", "run"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "coachbot: COACHBOT_WEBHOOK_URL must be https:// (Telegram only posts to https; http "
        "is allowed for 127.0.0.1 and localhost only), not 'http://'",
        "coachbot: COACHBOT_WEBHOOK_SECRET must be set when COACHBOT_WEBHOOK_URL is (1-256 "
        "characters of A-Z, a-z, 0-9, _ and -)",
        "coachbot: COACHBOT_METRICS_PORT: 'nine' is not a port number (1-65535)",
        "coachbot: COACHBOT_DEFAULT_TIMEZONE: 'Mars/Olympus' is not a known time zone (an "
        "IANA name such as Europe/Rome or UTC)",
    ]
    assert "Traceback" not in result.stderr


def test_the_send_give_up_limit_is_hours_and_checked() -> None:
    assert settings().send_give_up_after == timedelta(hours=12)
    assert settings(COACHBOT_SEND_GIVE_UP_HOURS="0.5").send_give_up_after == timedelta(
        minutes=30)
    for bad in ("0", "200", "soon"):
        assert [line.split(" ")[0] for line in problems(COACHBOT_SEND_GIVE_UP_HOURS=bad)] == [
            "COACHBOT_SEND_GIVE_UP_HOURS"]


def test_minimum_age_and_consent_window() -> None:
    from bot.config import ConfigError, load_settings

    base = {"COACHBOT_DIALOGUES": "dialogues"}
    defaults = load_settings(base)
    assert (defaults.min_age, defaults.consent_days) == (18, 7)
    chosen = load_settings({**base, "COACHBOT_MIN_AGE": "16", "COACHBOT_CONSENT_DAYS": "3"})
    assert (chosen.min_age, chosen.consent_days) == (16, 3)
    with pytest.raises(ConfigError) as bad:
        load_settings({**base, "COACHBOT_MIN_AGE": "²", "COACHBOT_CONSENT_DAYS": "0"})
    assert len(bad.value.problems) == 2


def test_retention_is_configurable_per_kind() -> None:
    from bot.config import DEFAULT_RETENTION_DAYS, ConfigError, load_settings

    base = {"COACHBOT_DIALOGUES": "dialogues"}
    assert load_settings(base).retention_days == DEFAULT_RETENTION_DAYS
    chosen = load_settings({**base, "COACHBOT_RETENTION": "sent_messages=3, invites=14"})
    assert chosen.retention_days == {**DEFAULT_RETENTION_DAYS, "sent_messages": 3,
                                     "invites": 14}
    with pytest.raises(ConfigError):
        load_settings({**base, "COACHBOT_RETENTION": "answers=1"})  # history is never pruned
