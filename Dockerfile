# syntax=docker/dockerfile:1
# coachbot image: `docker build -t coachbot .`, then see docs/deploy.md and compose.yaml.
# The same steps run on a plain machine in tests/ops/test_image_steps.py.

# --- builder: build the wheel, install it into a venv, compile and check the catalogs ---------
FROM python:3.11.13-slim-bookworm AS builder

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md babel.cfg ./
COPY bot ./bot
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
 && python -m venv /opt/coachbot \
 && /opt/coachbot/bin/pip install /wheels/coachbot-*.whl

COPY locales ./locales
COPY dialogues ./dialogues
# The bot compiles the .po files in memory at start; the .mo files are for other gettext tools.
# `coachbot validate` refuses broken dialogues and incomplete catalogs: such an image never builds.
RUN /opt/coachbot/bin/pybabel compile --statistics -d locales -D coachbot \
 && COACHBOT_LOCALES=/src/locales /opt/coachbot/bin/coachbot validate dialogues

# --- runtime: the venv, the dialogues and the catalogs; nothing to build with ---------------
FROM python:3.11.13-slim-bookworm AS runtime

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/coachbot/bin:$PATH \
    COACHBOT_DIALOGUES=/app/dialogues \
    COACHBOT_LOCALES=/app/locales \
    COACHBOT_DATABASE_URL=sqlite+aiosqlite:////data/coachbot.db \
    COACHBOT_LOG_FORMAT=json

RUN groupadd --system --gid 10001 coachbot \
 && useradd --system --uid 10001 --gid coachbot --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin coachbot \
 && mkdir -p /data \
 && chown coachbot:coachbot /data

COPY --from=builder /opt/coachbot /opt/coachbot
COPY --from=builder /src/dialogues /app/dialogues
COPY --from=builder /src/locales /app/locales

WORKDIR /app
USER 10001:10001
# 8080: the webhook server (POST <webhook path>, GET /healthz); metrics on COACHBOT_METRICS_PORT.
EXPOSE 8080

# /healthz answers 200 when the database answers (webhook mode only; in polling mode there is
# no server: disable the check, e.g. `healthcheck: {disable: true}` in compose).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"]

ENTRYPOINT ["coachbot"]
CMD ["run"]
