"""Logs and metrics: structured logging that never leaks a secret or a client's words, and
Prometheus metrics in a registry of their own.

Logging convention: a log message says *what happened* (ids, kinds, counts, durations). Anything
a person wrote or anything personal goes only in ``extra={"content": ...}``; the filter drops it
unless debug logging of content was switched on (``COACHBOT_DEBUG_LOG_CONTENT``)::

    log.info("answer saved for step %s", step_id, extra={"content": message.text})

The Telegram bot token (``123456:ABC…``) and any ``bot<token>`` API URL are replaced by
``[REDACTED]`` in the message, its arguments, exception text and stack text of every record that
reaches the handler installed by :func:`configure_logging`, whichever library logged it.

Only the standard library and ``prometheus_client`` are imported here.
"""

from __future__ import annotations

import json as _json
import logging
import os
import re
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import StrEnum
from threading import Thread
from typing import Any, TextIO
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
    make_wsgi_app,
    start_http_server,
)

__all__ = [
    "CHECKINS_DUE",
    "CHECKINS_SENT",
    "LOOP_ERRORS",
    "LOOP_LAST_ROUND",
    "OUTBOX_DEPTH",
    "REDACTED",
    "REGISTRY",
    "SENDS",
    "SEND_OUTCOMES",
    "UPDATES_HANDLED",
    "UPDATE_SECONDS",
    "Heartbeats",
    "JsonFormatter",
    "RedactingFilter",
    "configure_logging",
    "describe_failure",
    "handling_update",
    "metrics_app",
    "record_send",
    "redact",
    "render_metrics",
    "start_metrics_server",
]

# -- redaction --------------------------------------------------------------------------------

REDACTED = "[REDACTED]"
#: A bot API URL carries the token right after "bot": https://api.telegram.org/bot<token>/getMe
_BOT_URL = re.compile(r"bot\d+:[A-Za-z0-9_-]+")
#: A bare bot token: the bot's numeric id, a colon, then the secret part.
_TOKEN = re.compile(r"\d+:[A-Za-z0-9_-]{30,}")
#: The one extra attribute that may carry a person's words or personal data.
CONTENT_KEY = "content"


#: SQLAlchemy's statement parameters in an error's text (the engines hide them; this is the
#: second line of defence), up to its "Background on this error" line or the end: a client's
#: words may span lines or contain brackets.
_SQL_PARAMETERS = re.compile(r"\[parameters: .*?(?=\n\(Background on this error|\Z)", re.DOTALL)
#: PostgreSQL's details of a failed constraint quote the row or the key's values.
_PG_DETAIL = re.compile(r"(Failing row contains|DETAIL:\s*Key) .*?(?=\n|\Z)")


def redact(text: str) -> str:
    """``text`` with every bot token and ``bot<token>`` URL part replaced by ``[REDACTED]``,
    and the values of a failed SQL statement removed."""
    text = _BOT_URL.sub("bot" + REDACTED, text)
    text = _TOKEN.sub(REDACTED, text)
    text = _SQL_PARAMETERS.sub("[parameters: " + REDACTED + "]", text)
    return _PG_DETAIL.sub(r"\1 " + REDACTED, text)


def describe_failure(error: BaseException | None, *, frames: int = 6) -> str:
    """An exception as a log line may show it: the exception types of its chain and where it
    was raised (the innermost ``frames`` as file:line function), never its message, which
    can quote what a client wrote (``int('²')``, a statement's parameters)."""
    if error is None:
        return "unknown error"
    chain: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(type(current).__name__)
        current = current.__cause__ or current.__context__
    where = [f"{_short_path(f.filename)}:{f.lineno} {f.name}"
             for f in traceback.extract_tb(error.__traceback__)[-frames:]]
    text = " <- ".join(chain)
    return f"{text} at {' > '.join(where)}" if where else text


def _short_path(filename: str) -> str:
    for marker in ("/bot/", "/site-packages/"):
        if marker in filename:
            return filename.rsplit(marker, 1)[1] if marker != "/bot/" else \
                "bot/" + filename.rsplit(marker, 1)[1]
    return os.path.basename(filename)


class RedactingFilter(logging.Filter):
    """Removes secrets from every record, and personal content unless ``debug_content``.

    It rewrites the record in place (message formatted with its arguments, exception and stack
    text pre-rendered), so every formatter after it sees only the cleaned text. Install it on a
    *handler*: a filter on a logger does not see records propagated from child loggers.
    """

    def __init__(self, debug_content: bool = False) -> None:
        super().__init__()
        self.debug_content = debug_content

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string must not hide the record
            message = f"{record.msg!r} % {record.args!r}"
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        if hasattr(record, CONTENT_KEY):
            if self.debug_content:
                setattr(record, CONTENT_KEY, redact(str(getattr(record, CONTENT_KEY))))
            else:
                delattr(record, CONTENT_KEY)
        for key, value in list(vars(record).items()):  # extras (aiohttp's access log has some)
            if key not in _STANDARD_ATTRS and key != CONTENT_KEY and not key.startswith("_"):
                setattr(record, key, _redact_value(value))
        return True


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_value(v) for v in value]
    return value


# -- formatting -------------------------------------------------------------------------------

#: Attributes every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, message, then extras, exc, stack."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                entry[key] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exc"] = record.exc_text
        if record.stack_info:
            entry["stack"] = record.stack_info
        return _json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """The plain terminal format; debug content, when kept, follows the message."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        if hasattr(record, CONTENT_KEY):
            first, newline, rest = line.partition("\n")
            line = f"{first} | content={getattr(record, CONTENT_KEY)!r}{newline}{rest}"
        return line


_HANDLER_FLAG = "_coachbot_handler"


def configure_logging(*, json: bool | None = None, debug_content: bool = False,
                      level: int = logging.INFO, stream: TextIO | None = None) -> logging.Handler:
    """Send the root logger's records to ``stream`` (stderr), cleaned by a RedactingFilter.

    ``json=None`` picks the format: ``COACHBOT_LOG_FORMAT`` (``json`` or ``text``) when set,
    otherwise JSON lines unless the stream is a terminal. Calling it again replaces the handler
    it installed before. Returns the handler.
    """
    stream = sys.stderr if stream is None else stream
    if json is None:
        configured = os.environ.get("COACHBOT_LOG_FORMAT", "").strip().lower()
        json = configured == "json" if configured in ("json", "text") else not _isatty(stream)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if json else TextFormatter())
    handler.addFilter(RedactingFilter(debug_content=debug_content))
    setattr(handler, _HANDLER_FLAG, True)
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, _HANDLER_FLAG, False):
            root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per API call, token in URL
    return handler


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# -- metrics ----------------------------------------------------------------------------------

REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)

UPDATES_HANDLED = Counter("updates_handled_total", "Telegram updates handled, by kind "
                          "(message, callback, command, edited …)", ["kind"], registry=REGISTRY)
UPDATE_SECONDS = Histogram("update_seconds", "Time to handle one update, in seconds",
                           buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
                           registry=REGISTRY)
OUTBOX_DEPTH = Gauge("outbox_depth", "Messages waiting in the outbox (set by the sender)",
                     registry=REGISTRY)
SEND_OUTCOMES = ("ok", "429", "403", "error")
SENDS = Counter("sends_total", "Messages sent to Telegram, by outcome: ok, 429 (rate limited), "
                "403 (blocked by the user), error", ["outcome"], registry=REGISTRY)
for _outcome in SEND_OUTCOMES:
    SENDS.labels(_outcome)  # every outcome is exported from the start, at 0
CHECKINS_DUE = Counter("checkins_due_total", "Check-ins found due and claimed",
                       registry=REGISTRY)
CHECKINS_SENT = Counter("checkins_sent_total", "Check-ins accepted by Telegram",
                        registry=REGISTRY)
CRISIS_SIGNALS = Counter("crisis_signals_total", "Messages the crisis detector flagged, by "
                         "level (check, urgent) and category; never the words",
                         ["level", "category"], registry=REGISTRY)


LOOP_LAST_ROUND = Gauge("loop_last_round_timestamp_seconds", "When each background loop "
                        "(sender, scheduler, digests) last completed a round, as Unix time",
                        ["loop"], registry=REGISTRY)
LOOP_ERRORS = Counter("loop_errors_total", "Rounds of a background loop that failed (and were "
                      "retried after a back-off), by loop", ["loop"], registry=REGISTRY)


class Heartbeats:
    """The last completed round of each background loop of this process.

    A loop calls :meth:`expect` once (with how long a round may take before the loop counts
    as stuck) and :meth:`beat` after every round it completes; :meth:`stale` names the loops
    that have not completed one in time (``/healthz`` answers 503 then). Each beat also sets
    the loop's ``loop_last_round_timestamp_seconds`` gauge.
    """

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._within: dict[str, float] = {}
        self._last: dict[str, float] = {}

    def expect(self, loop: str, within: float) -> None:
        """Watch ``loop`` from now on: stale unless a round completes every ``within`` s."""
        self._within[loop] = within
        self._last.setdefault(loop, self._clock())
        LOOP_ERRORS.labels(loop)  # exported from the start, at 0

    def beat(self, loop: str) -> None:
        self._last[loop] = self._clock()
        LOOP_LAST_ROUND.labels(loop).set(time.time())

    def age(self, loop: str) -> float:
        """Seconds since ``loop`` last completed a round (or was first expected)."""
        return float(self._clock() - self._last.get(loop, -float("inf")))

    def stale(self) -> list[str]:
        return sorted(loop for loop, within in self._within.items()
                      if self.age(loop) > within)


def record_send(outcome: str) -> None:
    """Count one send: ``outcome`` is one of :data:`SEND_OUTCOMES`."""
    if outcome not in SEND_OUTCOMES:
        raise ValueError(f"unknown send outcome {outcome!r}; one of {SEND_OUTCOMES}")
    SENDS.labels(outcome).inc()


class UpdateKind(StrEnum):
    """What an update carries, as the metrics label it."""

    BUTTON = "button"
    COMMAND = "command"
    TEXT = "text"
    OTHER = "other"  # a sticker, a photo, an edit, a kind this bot does not handle


@contextmanager
def handling_update(kind: UpdateKind) -> Iterator[None]:
    """Time and count the handling of one update (also when it fails)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        UPDATE_SECONDS.observe(time.perf_counter() - start)
        UPDATES_HANDLED.labels(kind).inc()


def render_metrics() -> tuple[bytes, str]:
    """The metrics in the text exposition format, and its Content-Type.

    For an aiohttp route: ``body, ctype = render_metrics();
    return web.Response(body=body, headers={"Content-Type": ctype})``.
    """
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def metrics_app() -> Any:
    """A WSGI application serving the metrics (at ``/metrics``, and at any path)."""
    return make_wsgi_app(REGISTRY)


def start_metrics_server(port: int, addr: str = "0.0.0.0") -> tuple[WSGIServer, Thread]:
    """Serve ``/metrics`` on ``port`` from a daemon thread; ``server.shutdown()`` stops it."""
    server, thread = start_http_server(port, addr=addr, registry=REGISTRY)
    return server, thread

