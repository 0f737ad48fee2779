"""Structured logs that keep secrets and clients' words out, and the Prometheus metrics."""

from __future__ import annotations

import io
import json
import logging
import urllib.request
from collections.abc import Iterator

import pytest

from bot import observability as obs

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


@pytest.fixture
def capture() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    stream = io.StringIO()
    handler = obs.configure_logging(json=True, stream=stream)
    yield logging.getLogger("coachbot.test"), stream
    logging.getLogger().removeHandler(handler)


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_parse_with_level_logger_and_extras(
        capture: tuple[logging.Logger, io.StringIO]) -> None:
    log, stream = capture
    log.info("update %d handled", 7, extra={"update_id": 7})
    log.warning("second line")
    first, second = lines(stream)
    assert first["message"] == "update 7 handled"
    assert first["level"] == "INFO" and first["logger"] == "coachbot.test"
    assert first["update_id"] == 7 and "ts" in first
    assert second["level"] == "WARNING"


@pytest.mark.parametrize("emit", [
    lambda log: log.info(f"calling with {TOKEN}"),
    lambda log: log.info("token is %s", TOKEN),
    lambda log: log.info("GET https://api.telegram.org/bot%s/getMe", TOKEN),
    lambda log: log.info("GET %s", f"https://api.telegram.org/bot{TOKEN[:12]}/getMe"),
])
def test_the_token_is_redacted_from_messages_and_args(
        capture: tuple[logging.Logger, io.StringIO], emit: object) -> None:
    log, stream = capture
    emit(log)  # type: ignore[operator]
    (entry,) = lines(stream)
    assert TOKEN not in stream.getvalue() and TOKEN[:12] not in stream.getvalue()
    assert obs.REDACTED in str(entry["message"])


def test_the_token_is_redacted_from_exception_text(
        capture: tuple[logging.Logger, io.StringIO]) -> None:
    log, stream = capture
    try:
        raise RuntimeError(f"POST https://api.telegram.org/bot{TOKEN}/sendMessage failed")
    except RuntimeError:
        log.exception("send failed")
    (entry,) = lines(stream)
    assert "RuntimeError" in str(entry["exc"])
    assert TOKEN not in stream.getvalue()


def test_content_is_dropped_unless_debug(capture: tuple[logging.Logger, io.StringIO]) -> None:
    log, stream = capture
    log.info("answer saved", extra={"content": "I feel awful about my divorce"})
    (entry,) = lines(stream)
    assert "content" not in entry and "divorce" not in stream.getvalue()

    obs.configure_logging(json=True, stream=stream, debug_content=True)
    log.info("answer saved", extra={"content": f"my words {TOKEN}"})
    entry = lines(stream)[-1]
    assert entry["content"] == f"my words {obs.REDACTED}"


def test_text_format_on_a_terminal_and_json_otherwise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("COACHBOT_LOG_FORMAT", raising=False)
    terminal, pipe = Terminal(), io.StringIO()
    handler = obs.configure_logging(stream=terminal)
    logging.getLogger("x").info("hello %s", TOKEN)
    handler = obs.configure_logging(stream=pipe)
    logging.getLogger("x").info("hello")
    monkeypatch.setenv("COACHBOT_LOG_FORMAT", "text")
    forced = io.StringIO()
    handler = obs.configure_logging(stream=forced)
    logging.getLogger("x").info("hello")
    logging.getLogger().removeHandler(handler)
    assert terminal.getvalue().rstrip().endswith(f"INFO x: hello {obs.REDACTED}")
    assert json.loads(pipe.getvalue())["message"] == "hello"
    assert forced.getvalue().rstrip().endswith("INFO x: hello")
    # configure_logging replaces its own handler instead of adding one more
    assert sum(isinstance(h.formatter, obs.TextFormatter | obs.JsonFormatter)
               for h in logging.getLogger().handlers) == 0


def test_metrics_render_with_every_name() -> None:
    with obs.handling_update("message"):
        pass
    obs.record_send("429")
    obs.OUTBOX_DEPTH.set(3)
    obs.CHECKINS_DUE.inc()
    obs.CHECKINS_SENT.inc()
    body, content_type = obs.render_metrics()
    text = body.decode()
    assert content_type.startswith("text/plain")
    for name in ("updates_handled_total", "update_seconds_bucket", "update_seconds_count",
                 "outbox_depth 3.0", "checkins_due_total", "checkins_sent_total"):
        assert name in text, name
    assert 'updates_handled_total{kind="message"}' in text
    for outcome in obs.SEND_OUTCOMES:
        assert f'sends_total{{outcome="{outcome}"}}' in text
    with pytest.raises(ValueError):
        obs.record_send("500")


def test_metrics_server_serves_the_text_format() -> None:
    server, thread = obs.start_metrics_server(0, addr="127.0.0.1")
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
        assert "# TYPE sends_total counter" in text
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_metrics_app_is_a_wsgi_app_serving_the_same_text() -> None:
    from wsgiref.util import setup_testing_defaults

    environ: dict[str, object] = {"PATH_INFO": "/metrics"}
    setup_testing_defaults(environ)
    statuses: list[str] = []
    body = b"".join(obs.metrics_app()(environ, lambda status, headers: statuses.append(status)))
    assert statuses == ["200 OK"] and b"# TYPE outbox_depth gauge" in body


WORDS = "Tell my wife about the debts"


def test_a_failure_is_described_by_kind_and_place_never_by_its_text() -> None:
    try:
        try:
            int("²")
        except ValueError as exc:
            raise RuntimeError(f"could not read {WORDS}") from exc
    except RuntimeError as exc:
        line = obs.describe_failure(exc)
    assert line.startswith("RuntimeError <- ValueError at ")
    assert "test_observability.py:" in line and "test_a_failure_is_described" in line
    assert WORDS not in line and "²" not in line
    assert obs.describe_failure(None) == "unknown error"


def test_sql_parameters_and_row_details_are_redacted_from_any_record(
        capture: tuple[logging.Logger, io.StringIO]) -> None:
    log, stream = capture
    error = ("(sqlite3.IntegrityError) simulated\n[SQL: INSERT INTO answers VALUES (?, ?)]\n"
             f"[parameters: (7201, '\"{WORDS}]\nsecond line\"')]\n"
             "(Background on this error at: https://sqlalche.me/e/20/gkpj)")
    try:
        raise RuntimeError(error)
    except RuntimeError:
        log.exception("failed: %s", error)
    log.error('DETAIL:  Failing row contains (7, "%s", null).', WORDS)
    log.info("request", extra={"line": f"POST /bot{TOKEN}/x", "nested": {"a": [TOKEN]}})
    text = stream.getvalue()
    assert WORDS not in text and "second line" not in text and TOKEN not in text
    assert "[parameters: [REDACTED]]" in text and "Background on this error" in text
    assert lines(stream)[-1]["nested"] == {"a": [obs.REDACTED]}
