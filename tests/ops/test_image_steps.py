"""The Dockerfile's build and run steps, done on this machine in a fresh venv.

No Docker engine is needed: the wheel is built from the same files the Dockerfile copies,
installed into a new venv in a temporary folder, and the installed `coachbot` is run from
there (never from this checkout) with COACHBOT_DIALOGUES/COACHBOT_LOCALES pointing at copies.
Slow (it installs every dependency, from pip's cache when warm), so it runs once per session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds the wheel and installs it in a fresh venv: minutes

ROOT = Path(__file__).resolve().parents[2]
#: What the Dockerfile's builder stage copies before `pip wheel`.
BUILD_CONTEXT = ("pyproject.toml", "README.md", "babel.cfg", "bot")


@dataclass(frozen=True)
class Image:
    venv: Path
    app: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("COACHBOT_", "TELEGRAM_", "PYTHON", "VIRTUAL_ENV"))}
        env.update(PATH=f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
                   COACHBOT_DIALOGUES=str(self.app / "dialogues"),
                   COACHBOT_LOCALES=str(self.app / "locales"), **extra)
        return env

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.venv / "bin" / "coachbot"), *args], cwd=self.app,
                              env=self.env(**extra), capture_output=True, text=True, timeout=120)


def _check(command: list[str], cwd: Path) -> None:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stdout}\n{result.stderr}"


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    base = tmp_path_factory.mktemp("image")
    src, wheels, venv, app = base / "src", base / "wheels", base / "venv", base / "app"
    src.mkdir()
    for name in BUILD_CONTEXT:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    # RUN python -m pip wheel --no-deps --wheel-dir /wheels . && python -m venv /opt/coachbot
    #  && /opt/coachbot/bin/pip install /wheels/coachbot-*.whl
    _check([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir",
            str(wheels), "."], src)
    (wheel,) = wheels.glob("coachbot-*.whl")
    _check([sys.executable, "-m", "venv", str(venv)], base)
    _check([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
            str(wheel)], base)
    # COPY locales, dialogues; RUN pybabel compile --statistics -d locales -D coachbot
    app.mkdir()
    shutil.copytree(ROOT / "locales", app / "locales",
                    ignore=shutil.ignore_patterns("*.mo"))
    shutil.copytree(ROOT / "dialogues", app / "dialogues")
    _check([str(venv / "bin" / "pybabel"), "compile", "--statistics", "-d", "locales",
            "-D", "coachbot"], app)
    return Image(venv, app)


def test_the_installed_package_is_the_wheel_not_this_checkout(image: Image) -> None:
    result = subprocess.run([str(image.venv / "bin" / "python"), "-c",
                             "import bot; print(bot.__file__)"], cwd=image.app,
                            env=image.env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).is_relative_to(image.venv)


def test_catalogs_are_compiled(image: Image) -> None:
    catalogs = sorted(image.app.glob("locales/*/LC_MESSAGES/coachbot.po"))
    assert catalogs
    for po in catalogs:
        assert po.with_suffix(".mo").stat().st_size > 0, po


def _repo_catalog_problems() -> list[str]:
    from bot.cli import _check_translations
    from bot.dialogue import check_dialogues

    dialogues, _ = check_dialogues(ROOT / "dialogues")
    return [] if dialogues is None else _check_translations(dialogues)


def test_validate_reads_the_configured_dialogues_and_locales(image: Image) -> None:
    result = image.run("validate", str(image.app / "dialogues"))
    if result.returncode != 0 and _repo_catalog_problems():
        # The catalogs in this checkout are incomplete (tests/i18n fails the same way); the
        # step still has to read the copies it was pointed at, not this checkout.
        assert str(image.app / "locales") in result.stdout
        assert str(ROOT) not in result.stdout
        pytest.xfail("the catalogs in this checkout are incomplete, so `coachbot validate` "
                     "(and the image build) refuse them: " + result.stdout.splitlines()[0])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok: ")


def test_migrate_creates_the_schema_on_a_new_sqlite_file(image: Image, tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'coachbot.db'}"
    result = image.run("migrate", COACHBOT_DATABASE_URL=url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("database at revision ")
    assert result.stdout.strip() != "database at revision None"
    again = image.run("migrate", COACHBOT_DATABASE_URL=url)
    assert again.returncode == 0 and again.stdout == result.stdout


def test_run_without_a_token_says_so_in_one_line_and_exits_1(image: Image,
                                                             tmp_path: Path) -> None:
    result = image.run("run", COACHBOT_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'x.db'}")
    if "No module named 'bot.schedule'" in result.stderr and not (ROOT / "bot/schedule").exists():
        pytest.xfail("bot/schedule/ is not in this checkout yet (bot/telegram/app.py imports "
                     "it), so `coachbot run` cannot start")
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "coachbot: TELEGRAM_BOT_TOKEN is not set; to try the dialogues without Telegram, run "
        "`coachbot chat`"]


def test_bad_settings_stop_the_installed_command_with_exit_2(image: Image) -> None:
    result = image.run("run", COACHBOT_DEFAULT_TIMEZONE="Nowhere/Land")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "coachbot: COACHBOT_DEFAULT_TIMEZONE: 'Nowhere/Land' is not a known time zone (an "
        "IANA name such as Europe/Rome or UTC)"]
