"""`coachbot chat` driven end to end through a real subprocess, as a coach would script it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[1]


def chat(*args: str, stdin: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COACHBOT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/chat.db",
           "COACHBOT_DIALOGUES": str(REPO / "dialogues")}
    return subprocess.run([sys.executable, "-m", "bot.cli", "chat", *args], input=stdin,
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)


GOAL_ANSWERS = "\n".join([
    "Run a 10k race", "I want to feel strong again", "I cross the finish line smiling",
    "abc", "3", "I can already run 3 km", "/skip", "8", "someday", "2026-12-31", "/skip",
    "My sister runs", "Run twice a week; join a club", "/skip", "Buy running shoes",
    "2026-12-24", "5", "A friend to run with", "no",
]) + "\n"


def test_a_scripted_goal_setting_completes_and_exits_0(tmp_path: Path) -> None:
    result = chat("--dialogue", "goal_setting", "--name", "Ana", stdin=GOAL_ANSWERS,
                  tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("Let us give your goal some shape, \u2068Ana\u2069.")
    assert "Please answer with a whole number from 1 to 10." in out
    assert "Please send a date such as" in out
    # The goal's own date (December 31) is read back with its target.
    assert ("Goal: “\u2068Run a 10k race\u2069”. Today you are at 3 out of 10, and your target is "
            "8, by December 31, 2026. First step: “\u2068Buy running shoes\u2069”, by December 24, "
            "2026.") in out
    assert out.rstrip().endswith("I will ask how it goes in your check-ins.")
    assert result.stderr == ""


def test_choices_are_numbered_and_can_be_picked_by_number(tmp_path: Path) -> None:
    answers = "\n".join([
        "Run a 10k", "x", "p", "9", "n", "/skip", "9", "1", "/skip", "/skip", "/skip", "o",
        "/skip", "s", "2026-12-24", "9",
    ]) + "\n"
    result = chat("--dialogue", "goal_setting", stdin=answers, tmp_path=tmp_path)
    assert "  1. Yes\n  2. No" in result.stdout
    assert result.returncode == 0
    assert result.stderr == ""


def test_input_ending_early_says_so(tmp_path: Path) -> None:
    result = chat("--dialogue", "goal_setting", stdin="Run a 10k\n", tmp_path=tmp_path)
    assert result.returncode == 0
    assert "stopped before the end" in result.stderr


def test_an_unknown_dialogue_is_a_clear_error(tmp_path: Path) -> None:
    result = chat("--dialogue", "nope", stdin="", tmp_path=tmp_path)
    assert result.returncode == 2
    assert "no dialogue 'nope'; there are:" in result.stderr


def test_a_stopped_chat_continues_where_it_stood(tmp_path: Path) -> None:
    first = chat("--dialogue", "goal_setting", "--name", "Ana", stdin="Run a 10k race\n",
                 tmp_path=tmp_path)
    assert "stopped before the end" in first.stderr
    why = "You chose: “\u2068Run a 10k race\u2069”. What makes it important to you?"
    assert first.stdout.rstrip().endswith(why)
    second = chat(stdin="Because I can\n", tmp_path=tmp_path)
    assert second.returncode == 0
    assert second.stdout.startswith(why)
    assert "Imagine you have reached it." in second.stdout


def test_export_and_erase_from_the_command_line(tmp_path: Path) -> None:
    chat("--dialogue", "goal_setting", stdin="Run a 10k race\n", tmp_path=tmp_path)
    env = {**os.environ, "COACHBOT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/chat.db",
           "COACHBOT_DIALOGUES": str(REPO / "dialogues")}

    def admin(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bot.cli", "admin", *args],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)

    exported = json.loads(admin("export", "0").stdout)
    assert [a["value"] for a in exported["answers"]] == ["Run a 10k race"]
    assert admin("erase", "0").returncode == 2
    assert admin("erase", "0", "--yes").returncode == 0
    after = json.loads(admin("export", "0").stdout)
    assert after["users"] == [] and after["answers"] == []


def test_key_rotation_from_the_command_line(tmp_path: Path) -> None:
    """A new key first, `admin reencrypt`, then the old key dropped; a key list sharing no
    key with the database is refused with a clear message."""
    from cryptography.fernet import Fernet

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    base = {**os.environ, "COACHBOT_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/chat.db",
            "COACHBOT_DIALOGUES": str(REPO / "dialogues")}

    def admin(key: str | None, *args: str) -> subprocess.CompletedProcess[str]:
        env = dict(base)
        env.pop("COACHBOT_ENCRYPTION_KEY", None)
        if key is not None:
            env["COACHBOT_ENCRYPTION_KEY"] = key
        return subprocess.run([sys.executable, "-m", "bot.cli", "admin", *args],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)

    subprocess.run([sys.executable, "-m", "bot.cli", "chat", "--dialogue", "goal_setting"],
                   input="Run a 10k race\n", capture_output=True, text=True, cwd=tmp_path,
                   env={**base, "COACHBOT_ENCRYPTION_KEY": old}, timeout=60, check=True)
    assert admin(None, "reencrypt").returncode == 2
    done = admin(f"{new},{old}", "reencrypt", "--batch", "2")
    assert done.returncode == 0, done.stderr
    assert "answers.value: 1 rewritten" in done.stdout
    assert "can now be dropped" in done.stdout
    exported = json.loads(admin(new, "export", "0").stdout)
    assert [a["value"] for a in exported["answers"]] == ["Run a 10k race"]
    refused = admin(old, "export", "0")
    assert refused.returncode == 1
    assert "shares no key" in refused.stderr and old not in refused.stderr
