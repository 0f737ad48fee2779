"""`coachbot run`: the bot on Telegram, by long polling or behind a webhook."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hmac
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from sqlalchemy import text
from telegram import BotCommandScopeAllPrivateChats, Update
from telegram.error import InvalidToken, NetworkError, TelegramError
from telegram.ext import Application, BaseUpdateProcessor, ContextTypes, TypeHandler
from telegram.request import BaseRequest

from bot.coaching.contracts import check_contracts
from bot.coaching.links import coach_locales
from bot.coaching.privacy import PrivacyFacts
from bot.config import Settings
from bot.dialogue import check_dialogues
from bot.dialogue.model import DialogueSet
from bot.engine import warm_up
from bot.i18n import SOURCE_LOCALE, SUPPORTED_LOCALES, translator_for
from bot.loops import Supervisor
from bot.observability import Heartbeats, describe_failure
from bot.schedule.runner import STALE_AFTER, start_scheduler
from bot.store import KeyMismatchError, Retention, Store, is_outage
from bot.store.engine import is_sqlite
from bot.telegram.commands import CLIENT_MENU, COMMANDS, set_coach_menus
from bot.telegram.handlers import Handlers
from bot.telegram.http import AiohttpRequest
from bot.telegram.sender import Sender

log = logging.getLogger(__name__)

ALLOWED_UPDATES = [Update.MESSAGE, Update.EDITED_MESSAGE, Update.CALLBACK_QUERY,
                   Update.MY_CHAT_MEMBER]
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
HEALTH_PATH = "/healthz"


class StartupError(Exception):
    """A problem that stops the bot from starting, said in one line."""


class PerChatUpdateProcessor(BaseUpdateProcessor):
    """Updates run concurrently, but one chat's updates run one after the other, in order.

    An update waits for its chat's turn before it takes one of the `places`, so a user who
    floods the bot queues behind themself and never starves everybody else. (PTB's own limit
    would be taken while waiting, hence a limit of our own, after the chat's lock.)
    """

    def __init__(self, places: int) -> None:
        super().__init__(2**31 - 1)
        self._places = asyncio.Semaphore(places)
        self._locks: dict[int, asyncio.Lock] = {}
        self._waiting: dict[int, int] = {}

    async def do_process_update(self, update: object, coroutine: Awaitable[Any]) -> None:
        key = _chat_key(update)
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._waiting[key] = self._waiting.get(key, 0) + 1
        try:
            async with lock, self._places:
                await coroutine
        finally:
            self._waiting[key] -= 1
            if not self._waiting[key]:
                del self._waiting[key], self._locks[key]

    async def initialize(self) -> None:
        return None

    async def shutdown(self) -> None:
        return None


HTTP_CONNECTIONS = 8
HTTP_POOL_WAIT = 30.0  # seconds


def _chat_key(update: object) -> int:
    if isinstance(update, Update):
        if update.effective_chat is not None:
            return update.effective_chat.id
        if update.effective_user is not None:
            return update.effective_user.id
    return 0


class FailedUpdates:
    """The error handler: logs a failed update (its kind, never the message) and tells the
    user the truth, never a traceback: their message did not reach the bot (its turn was
    rolled back), so they should send it again.

    In webhook mode an update that failed because the database is away (after the turn's
    own retries, see ``Store.run_turn``) is not answered: its id is kept in ``redeliver``,
    and the webhook answers 503 so that Telegram sends it again later (the processed update
    ids make it count once), up to ``redeliveries`` times; then the user is told."""

    REMEMBERED = 10_000  # update ids whose failed deliveries are counted

    def __init__(self, *, webhook: bool, redeliveries: int = 3,
                 say: Callable[[int, str], Awaitable[None]] | None = None) -> None:
        """``say``: how the user is told (the sender's, within the bot's budget)."""
        self.webhook = webhook
        self.say = say
        self.redeliveries = redeliveries
        self.redeliver: set[int] = set()
        self._failures: dict[int, int] = {}

    async def __call__(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        error = context.error
        update_id = update.update_id if isinstance(update, Update) else None
        user_id = update.effective_user.id if isinstance(update, Update) \
            and update.effective_user is not None else None
        # ids, the failure's kind and where, never its message: that can quote the user
        log.error("update %s of user %s failed: %s", update_id, user_id,
                  describe_failure(error))
        if self.webhook and isinstance(update, Update) and error is not None \
                and is_outage(error):
            failures = self._failures.pop(update.update_id, 0) + 1
            if failures <= self.redeliveries:
                if len(self._failures) >= self.REMEMBERED:
                    self._failures.pop(next(iter(self._failures)))
                self._failures[update.update_id] = failures
                self.redeliver.add(update.update_id)
                return
        if isinstance(update, Update) and update.effective_user is not None \
                and update.effective_chat is not None \
                and update.effective_chat.type == "private":
            tr = translator_for(update.effective_user.language_code)
            text = tr.gettext("Sorry, something went wrong on my side and your last message "
                              "did not reach me. Please send it again in a moment.")
            with contextlib.suppress(TelegramError):
                if self.say is not None:
                    await self.say(update.effective_chat.id, text)
                else:
                    await context.bot.send_message(update.effective_chat.id, text)


async def set_commands(application: Application[Any, Any, Any, Any, Any, Any]) -> None:
    """The clients' command menu, in every language the bot speaks, in private chats only
    (in a group chat the bot answers a command with a pointer to the private chat). The
    default scope's menu, where earlier versions set it, is removed."""
    for locale in SUPPORTED_LOCALES:
        commands = COMMANDS.menu(CLIENT_MENU, translator_for(locale))
        language = None if locale == SOURCE_LOCALE else locale
        await application.bot.set_my_commands(commands, scope=BotCommandScopeAllPrivateChats(),
                                              language_code=language)
        await application.bot.delete_my_commands(language_code=language)


async def set_coach_commands(application: Application[Any, Any, Any, Any, Any, Any],
                             store: Store) -> None:
    """Each coach's own menu (the coach commands too), in their language. Never fatal: the
    commands work without a menu, and the next start tries again."""
    try:
        async with store.sessionmaker() as session:
            coaches = await coach_locales(session)
    except Exception as exc:
        log.warning("coaches' command menus not set: %s", describe_failure(exc))
        return
    done = await set_coach_menus(application.bot, coaches)
    log.info("command menus set for %d of %d coaches", done, len(coaches))


def load_dialogue_set(settings: Settings) -> DialogueSet:
    dialogues, errors = check_dialogues(settings.dialogues)
    if dialogues is not None:
        errors = check_contracts(dialogues, settings.dialogues)
        dialogues = None if errors else dialogues
    if dialogues is None:
        raise StartupError("the dialogues have problems; run `coachbot validate`:\n"
                           + "\n".join(str(e) for e in errors))
    return dialogues


def webhook_app(application: Application[Any, Any, Any, Any, Any, Any], store: Store,
                settings: Settings, *, heartbeats: Heartbeats | None = None,
                failed: FailedUpdates | None = None) -> web.Application:
    """Updates arrive as POSTs and are handled before the answer, so Telegram redelivers
    whatever a killed process did not finish, and whatever failed because the database was
    away (answered 503; the update id makes it count once). ``/healthz`` answers 503 when
    the database cannot be reached or a background loop has not completed a round lately."""
    path = urlsplit(settings.webhook_url or "").path or "/"
    secret = settings.webhook_secret or ""

    async def receive(request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), secret.encode()):
            return web.Response(status=403, text="forbidden")
        try:
            data = await request.json()
            update = Update.de_json(data, application.bot)
        except (ValueError, TypeError, KeyError):
            return web.Response(status=400, text="not an update")
        await application.process_update(update)
        if failed is not None and update.update_id in failed.redeliver:
            failed.redeliver.discard(update.update_id)
            return web.Response(status=503, text="not processed; send it again")
        return web.Response(text="ok")

    async def health(request: web.Request) -> web.Response:
        try:
            async with store.engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        except Exception as exc:  # any database failure makes the replica unhealthy
            return web.json_response({"status": "database unavailable",
                                      "error": type(exc).__name__}, status=503)
        stale = heartbeats.stale() if heartbeats is not None else []
        if stale:
            return web.json_response({"status": "background loop stalled", "loops": stale},
                                     status=503)
        return web.json_response({"status": "ok"})

    app = web.Application(client_max_size=1024 * 1024)
    app.router.add_post(path, receive)
    app.router.add_get(HEALTH_PATH, health)
    return app


@dataclass
class Wired:
    """The application with its handlers, error handler and sender: the bot minus its loops
    and its way of receiving updates (polling or webhook), which `serve` adds."""

    application: Application[Any, Any, Any, Any, Any, Any]
    sender: Sender
    handlers: Handlers
    failed: FailedUpdates


def wire(settings: Settings, store: Store, dialogues: DialogueSet, *,
         requests: tuple[BaseRequest, BaseRequest], heartbeats: Heartbeats | None = None,
         per_chat_interval: float = 1.0) -> Wired:
    """The real application, as `serve` runs it, talking to Telegram through `requests`
    (for API calls, for getUpdates); the in-process test client (tests/inprocess.py) passes
    its own, and a per-chat interval of 0 (pacing is the sender's tests' business)."""
    assert settings.telegram_token is not None
    base = settings.telegram_api_base_url.rstrip("/")
    application = (
        Application.builder().token(settings.telegram_token)
        .base_url(f"{base}/bot").base_file_url(f"{base}/file/bot")
        .concurrent_updates(PerChatUpdateProcessor(64))
        .request(requests[0]).get_updates_request(requests[1])
        .build()
    )
    sender = Sender(store, application.bot, rate=settings.send_rate, shared=True,
                    paid_broadcast=settings.allow_paid_broadcast, heartbeats=heartbeats,
                    give_up_after=settings.send_give_up_after,
                    per_chat_interval=per_chat_interval)
    handlers = Handlers(store, dialogues, sender, admin_ids=settings.admin_ids,
                        bot_username=lambda: application.bot.username,
                        min_age=settings.min_age,
                        privacy=PrivacyFacts(settings.retention_days["client_history"],
                                             encrypted=bool(settings.encryption_key)))
    application.add_handler(TypeHandler(Update, handlers.on_update))
    failed = FailedUpdates(webhook=bool(settings.webhook_url), say=sender.say_now)
    application.add_error_handler(failed)
    return Wired(application, sender, handlers, failed)


async def serve(settings: Settings, *, stop: asyncio.Event | None = None,
                listen: tuple[str, int] = ("0.0.0.0", 8080), own_process: bool = False,
                on_ready: Callable[[Wired], None] | None = None) -> None:
    """Run until `stop` is set (or SIGINT/SIGTERM), then finish what is in flight.
    `own_process`: nothing else runs in this process, so its garbage collection may be set
    up for a long-running server once started (see `settle_garbage_collection`).
    `on_ready`: called with the running bot's parts once it receives updates (the tests
    that run it in their process wait on its update queue to know when it is idle)."""
    if not settings.telegram_token:
        raise StartupError("TELEGRAM_BOT_TOKEN is not set; to try the dialogues without "
                           "Telegram, run `coachbot chat`")
    if settings.webhook_url and not settings.webhook_secret:
        raise StartupError("COACHBOT_WEBHOOK_SECRET must be set in webhook mode, so that only "
                           "Telegram can post updates")
    if not settings.encryption_key:
        if not is_sqlite(settings.database_url) and not settings.allow_plaintext:
            raise StartupError(
                "COACHBOT_ENCRYPTION_KEY is not set: on PostgreSQL the bot does not store "
                "what clients write in plain text; set a key (docs/deploy.md), or "
                "COACHBOT_ALLOW_PLAINTEXT=1 to run without one")
        log.warning("COACHBOT_ENCRYPTION_KEY is not set: what clients write is stored in "
                    "plain text")
    dialogues = load_dialogue_set(settings)
    warm_up()
    stop = stop or asyncio.Event()
    store = Store(settings.database_url, encryption_key=settings.encryption_key)
    try:
        await store.start()
    except KeyMismatchError as exc:
        raise StartupError(str(exc)) from None
    base = settings.telegram_api_base_url.rstrip("/")
    # A few keep-alive connections carry Telegram's 30 messages a second; a request waits
    # for a free one rather than failing after PTB's 1 s.
    requests = (AiohttpRequest(connections=HTTP_CONNECTIONS, pool_timeout=HTTP_POOL_WAIT),
                AiohttpRequest(connections=1))
    heartbeats = Heartbeats()
    supervisor = Supervisor()
    loops_stop = asyncio.Event()
    wired = wire(settings, store, dialogues, requests=requests, heartbeats=heartbeats)
    application, sender, failed = wired.application, wired.sender, wired.failed
    runner: web.AppRunner | None = None
    try:
        try:
            await application.initialize()
        except InvalidToken as exc:
            raise StartupError("Telegram refused the bot token (TELEGRAM_BOT_TOKEN)") from exc
        except NetworkError as exc:
            raise StartupError(f"cannot reach the Telegram Bot API at {base} "
                               f"({type(exc).__name__})") from exc
        await set_commands(application)
        await set_coach_commands(application, store)
        await application.start()
        heartbeats.expect("sender", STALE_AFTER["sender"])
        supervisor.start("sender", sender.run)
        start_scheduler(store, dialogues, sender, supervisor=supervisor, heartbeats=heartbeats,
                        stop=loops_stop, consent_within=timedelta(days=settings.consent_days),
                        retention=Retention(**{kind: timedelta(days=days) for kind, days
                                               in settings.retention_days.items()}))
        if settings.webhook_url:
            runner = web.AppRunner(webhook_app(application, store, settings,
                                               heartbeats=heartbeats, failed=failed))
            await runner.setup()
            await web.TCPSite(runner, *listen).start()
            await application.bot.set_webhook(settings.webhook_url,
                                              secret_token=settings.webhook_secret,
                                              allowed_updates=ALLOWED_UPDATES)
        else:
            assert application.updater is not None
            await application.updater.start_polling(allowed_updates=ALLOWED_UPDATES)
        if own_process:
            settle_garbage_collection()
        if on_ready is not None:
            on_ready(wired)
        log.info("coachbot is running (%s)", "webhook" if settings.webhook_url else "polling")
        _stop_on_signals(stop)
        await stop.wait()
        log.info("stopping: finishing what is in flight")
        if application.updater is not None and application.updater.running:
            await application.updater.stop()
        if runner is not None:
            await runner.cleanup()
        loops_stop.set()
        supervisor.stopping()
        await application.stop()
        await sender.stop()
        await supervisor.stop()
    finally:
        loops_stop.set()
        await supervisor.stop(timeout=5)
        if application.running:
            await application.stop()
        with contextlib.suppress(Exception):
            await application.shutdown()
        for request in requests:  # PTB leaves them open when initialize() failed
            await request.shutdown()
        await store.close()


def settle_garbage_collection() -> None:
    """Once started: what start-up loaded lives as long as the process, so the collector stops
    scanning it (a full collection of it took about 110 ms), and looks for cycles every
    10,000 new objects rather than 700. Measured under load (docs/performance.md): time in the
    collector from 0.23 to 0.02 ms per update."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000)


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop.set)
