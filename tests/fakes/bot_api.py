"""A fake Telegram Bot API server for tests.

It speaks the real HTTP protocol of https://core.telegram.org/bots/api, so the real
python-telegram-bot client runs against it unmodified::

    async with FakeBotApi() as fake:
        bot = telegram.Bot(fake.token, base_url=fake.base_url)
        fake.send_text(42, "/start")            # a user writes to the bot
        await fake.wait_for_messages(42, 1)     # ... and the bot answered

It is as strict as Telegram where that catches bot bugs (message length in UTF-16 code units,
HTML that Telegram cannot parse, callback_data over 64 bytes, edits that change nothing, answering
a callback query twice, ...), and it can inject failures (429, 5xx, blocked users, slow answers).
When asked (:meth:`FakeBotApi.enforce_limits`) it keeps Telegram's send limits as well: about
30 messages a second per bot over all connections (1,000 for paid broadcasts) and about one a
second per chat with short bursts, answering 429 with ``retry_after`` beyond them.
"""

from __future__ import annotations

import asyncio
import copy
import html
import json
import math
import re
import time
from collections import Counter, defaultdict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from types import TracebackType
from typing import Any, Self

import aiohttp
from aiohttp import web

JSON = dict[str, Any]

DEFAULT_TOKEN = "123456:TEST-TOKEN"

MAX_MESSAGE_LENGTH = 4096  # UTF-16 code units, after entity parsing
MAX_CAPTION_LENGTH = 1024
MAX_CALLBACK_DATA_BYTES = 64
MAX_CALLBACK_ANSWER_LENGTH = 200

# Parameters whose form/query values python-telegram-bot sends JSON-encoded.
_JSON_FIELDS = frozenset(
    {
        "reply_markup",
        "commands",
        "scope",
        "entities",
        "caption_entities",
        "allowed_updates",
        "link_preview_options",
        "reply_parameters",
    }
)
_INT_FIELDS = frozenset(
    {
        "chat_id",
        "message_id",
        "message_thread_id",
        "offset",
        "limit",
        "timeout",
        "cache_time",
        "max_connections",
        "user_id",
    }
)
_BOOL_FIELDS = frozenset(
    {
        "drop_pending_updates",
        "show_alert",
        "disable_notification",
        "protect_content",
        "disable_web_page_preview",
        "disable_content_type_detection",
        "has_spoiler",
    }
)

_HTML_TAGS = frozenset(
    {
        "b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler",
        "a", "code", "pre", "blockquote", "tg-emoji",
    }
)  # fmt: skip
_HTML_TAG_RE = re.compile(r"<(/?)([^<>\s/]*)[^<>]*>|<")
_BOT_COMMAND_RE = re.compile(r"/[A-Za-z0-9_]{1,32}(@[A-Za-z0-9_]+)?")
_COMMAND_NAME_RE = re.compile(r"[a-z0-9_]{1,32}")
_BUTTON_ACTIONS = (
    "url",
    "callback_data",
    "web_app",
    "login_url",
    "switch_inline_query",
    "switch_inline_query_current_chat",
    "switch_inline_query_chosen_chat",
    "copy_text",
    "callback_game",
    "pay",
)
_CHAT_ACTIONS = frozenset(
    {
        "typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice",
        "upload_document", "choose_sticker", "find_location", "record_video_note",
        "upload_video_note",
    }
)  # fmt: skip
# Update types Telegram does not send unless they are listed in allowed_updates.
_OPT_IN_UPDATES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})


class ApiError(Exception):
    """An error answer of the Bot API: HTTP status plus Telegram's description."""

    def __init__(self, status: int, description: str, parameters: JSON | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters

    def to_json(self) -> JSON:
        body: JSON = {"ok": False, "error_code": self.status, "description": self.description}
        if self.parameters:
            body["parameters"] = self.parameters
        return body


def _bad_request(reason: str) -> ApiError:
    return ApiError(400, f"Bad Request: {reason}")


@dataclass
class UploadedFile:
    """A file the bot uploaded in a multipart request."""

    filename: str
    content: bytes
    content_type: str


@dataclass
class RecordedRequest:
    """One HTTP request the bot made. `status` is the HTTP status it got (0 while pending)."""

    method: str
    params: JSON
    time: float  # time.monotonic()
    status: int = 0


@dataclass
class SentMessage:
    """A message the bot sent; `text` is the raw text as sent (before parse_mode is applied)."""

    chat_id: int
    message_id: int
    text: str | None
    reply_markup: JSON | None
    parse_mode: str | None
    time: float
    kind: str = "text"  # "text", "document" or "photo"
    caption: str | None = None
    edited: bool = False


@dataclass
class SentFile:
    """A document or photo the bot sent."""

    chat_id: int
    message_id: int
    file_id: str
    file_name: str | None
    content: bytes
    mime_type: str | None
    caption: str | None
    time: float


@dataclass
class AnsweredCallback:
    callback_query_id: str
    text: str | None
    show_alert: bool
    url: str | None
    time: float


@dataclass
class WebhookDelivery:
    """One attempt to POST an update to the webhook; status is None on a connection error."""

    update_id: int
    status: int | None
    time: float


@dataclass
class _Failure:
    status: int
    description: str
    retry_after: int | None
    remaining: int


@dataclass(frozen=True)
class _Limits:
    per_bot: float  # messages in any one second, over every connection
    per_chat: float  # messages a second to one chat, on average
    chat_burst: int  # ... of which this many may come at once
    paid_per_bot: float  # messages with allow_paid_broadcast, in any one second


#: The methods that send a message to a chat (what Telegram's limits count).
_SENDING = frozenset({"sendmessage", "sendphoto", "senddocument"})


@dataclass
class _Hang:
    seconds: float
    remaining: int | None  # None: until clear_failures()


@dataclass
class _Pending:
    update: JSON
    # A redelivered copy is served once even though its update_id is below the confirmed offset.
    sticky: bool = False


@dataclass
class _StoredFile:
    file_id: str
    file_unique_id: str
    file_name: str | None
    content: bytes
    mime_type: str | None


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units, the way Telegram measures text."""
    return len(text.encode("utf-16-le")) // 2


def html_to_plain(text: str) -> str:
    """Strip Telegram-HTML markup, raising the ApiError Telegram gives for markup it rejects."""
    stack: list[str] = []
    parts: list[str] = []
    position = 0
    for match in _HTML_TAG_RE.finditer(text):
        parts.append(text[position : match.start()])
        position = match.end()
        offset = len(text[: match.start()].encode())
        closing, name = match.group(1), (match.group(2) or "").lower()
        if closing is None:  # a bare "<"
            raise _bad_request(
                f"can't parse entities: Unsupported start tag at byte offset {offset}"
            )
        if name not in _HTML_TAGS:
            raise _bad_request(
                f'can\'t parse entities: Unsupported start tag "{name}" at byte offset {offset}'
            )
        if not closing:
            stack.append(name)
        elif not stack:
            raise _bad_request(f"can't parse entities: Unexpected end tag at byte offset {offset}")
        elif stack[-1] != name:
            raise _bad_request(
                f"can't parse entities: Unmatched end tag at byte offset {offset}, "
                f'expected "</{stack[-1]}>", found "</{name}>"'
            )
        else:
            stack.pop()
    if stack:
        raise _bad_request(
            f"can't parse entities: Can't find end tag corresponding to start tag \"{stack[-1]}\""
        )
    parts.append(text[position:])
    return html.unescape("".join(parts))


def _visible_text(text: str, parse_mode: str | None) -> str:
    # Only HTML is parsed; Markdown text is measured as sent (slightly stricter than Telegram).
    if parse_mode is not None and parse_mode.lower() == "html":
        return html_to_plain(text)
    return text


def _check_reply_markup(markup: Any) -> JSON | None:
    if markup is None:
        return None
    if not isinstance(markup, dict):
        raise _bad_request("can't parse reply keyboard markup JSON object")
    rows = markup.get("inline_keyboard")
    if rows is None:
        return markup
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise _bad_request(
            'field "inline_keyboard" of the InlineKeyboardMarkup should be an Array of Arrays'
        )
    for button in (button for row in rows for button in row):
        if not isinstance(button, dict) or not isinstance(button.get("text"), str):
            raise _bad_request(
                'can\'t parse inline keyboard button: Field "text" must be of type String'
            )
        if not any(action in button for action in _BUTTON_ACTIONS):
            raise _bad_request(
                "can't parse inline keyboard button: "
                "Text buttons are unallowed in the inline keyboard"
            )
        data = button.get("callback_data")
        if data is not None and not 1 <= len(str(data).encode()) <= MAX_CALLBACK_DATA_BYTES:
            raise _bad_request("BUTTON_DATA_INVALID")
    return markup


def _inline_keyboard(markup: JSON | None) -> JSON | None:
    """The part of a reply_markup that Telegram shows in the Message object."""
    return markup if markup is not None and "inline_keyboard" in markup else None


def _callback_datas(message: JSON) -> list[str]:
    rows = (message.get("reply_markup") or {}).get("inline_keyboard", [])
    return [button["callback_data"] for row in rows for button in row if "callback_data" in button]


def _update_type(update: JSON) -> str:
    return next((key for key in update if key != "update_id"), "")


def _scope_key(scope: Any) -> str:
    """The key of `scope` in FakeBotApi.commands: "default", "chat:42", "chat_member:42:7"..."""
    if not isinstance(scope, dict):
        return "default"
    ids = [str(scope[key]) for key in ("chat_id", "user_id") if key in scope]
    return ":".join([str(scope.get("type", "default")), *ids])


def _normalize(name: str, value: str) -> Any:
    """Decode a form/query value the way Telegram does for the parameter's type."""
    if name in _JSON_FIELDS:
        try:
            return json.loads(value)
        except ValueError:
            raise _bad_request(f"can't parse {name} JSON object") from None
    if name in _INT_FIELDS:
        try:
            return int(value)
        except ValueError:
            return value  # e.g. chat_id="@channel"
    if name in _BOOL_FIELDS:
        return value.lower() in ("true", "1")
    return value


async def _read_params(request: web.Request) -> JSON:
    params: JSON = {key: _normalize(key, value) for key, value in request.query.items()}
    if request.method != "POST" or not request.can_read_body:
        return params
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError:
            raise _bad_request("can't parse JSON body") from None
        if isinstance(body, dict):
            params.update(
                {key: _normalize(key, v) if isinstance(v, str) else v for key, v in body.items()}
            )
        return params
    for key, value in (await request.post()).items():
        if isinstance(value, web.FileField):
            params[key] = UploadedFile(value.filename, value.file.read(), value.content_type)
        elif isinstance(value, str):
            params[key] = _normalize(key, value)
        else:
            params[key] = _normalize(key, bytes(value).decode())
    return params


Handler = Callable[[JSON], Awaitable[Any]]


class StoppedClock:
    """A clock for the fake's limits that moves only when a test moves it (``now``)."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def __call__(self) -> float:
        return self.now


class FakeBotApi:
    """An in-process fake of the Telegram Bot API (see the module docstring)."""

    def __init__(
        self,
        token: str = DEFAULT_TOKEN,
        *,
        bot_username: str = "coachbot_test_bot",
        webhook_retry_delay: float = 0.05,
    ) -> None:
        self.token = token
        self.bot_id = int(token.split(":", 1)[0])
        self.bot_username = bot_username
        self.webhook_retry_delay = webhook_retry_delay

        # Recording (public, read by tests).
        self.requests: list[RecordedRequest] = []
        self.sent: defaultdict[int, list[SentMessage]] = defaultdict(list)
        self.answered_callbacks: list[AnsweredCallback] = []
        self.commands: dict[tuple[str, str], list[JSON]] = {}  # (scope key, language_code)
        self.documents: list[SentFile] = []
        # copyMessage calls that succeeded: (to chat, from chat, message id).
        self.copies: list[tuple[int, int, int]] = []
        self.photos: list[SentFile] = []
        # Files users sent the bot, by file_id (getFile, then a download of its file_path).
        self.user_files: dict[str, bytes] = {}
        self.webhook_deliveries: list[WebhookDelivery] = []
        self.webhook_url = ""
        self.webhook_secret: str | None = None

        # Simulated Telegram state.
        self._queue: list[_Pending] = []
        self._history: dict[int, JSON] = {}
        self._next_update_id = 1
        self._next_message_id: defaultdict[int, int] = defaultdict(lambda: 1)
        self._messages: dict[tuple[int, int], JSON] = {}
        self._sent_index: dict[tuple[int, int], SentMessage] = {}
        self._chats: dict[int, JSON] = {}
        self._users: dict[int, JSON] = {}
        self._files: dict[str, _StoredFile] = {}
        self._open_callbacks: set[str] = set()
        self._next_callback_id = 1
        self._allowed_updates: list[str] = []
        self._poll_generation = 0
        self._webhook_last_error: tuple[int, str] | None = None

        # Failure injection.
        self._failures: defaultdict[str, list[_Failure]] = defaultdict(list)
        self._hangs: dict[str, _Hang] = {}
        self._blocked: set[int] = set()
        self._limits: _Limits | None = None
        self.limits_clock: Callable[[], float] = time.monotonic  # a test may set its own
        self._bot_window: deque[float] = deque()  # accepted sends in the last second
        self._paid_window: deque[float] = deque()
        self._chat_tokens: dict[int, tuple[float, float]] = {}  # chat -> (tokens, as of)
        self.rate_limited = 0  # sends answered 429 by the limits (not by fail_next)
        self.rate_limited_by: Counter[str] = Counter()  # ... by which: "bot" or "chat"

        self._changed = asyncio.Event()
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._session: aiohttp.ClientSession | None = None
        self._webhook_task: asyncio.Task[None] | None = None
        self._handlers: dict[str, Handler] = {
            name.lower(): handler
            for name, handler in {
                "getMe": self._get_me,
                "getUpdates": self._get_updates,
                "setWebhook": self._set_webhook,
                "deleteWebhook": self._delete_webhook,
                "getWebhookInfo": self._get_webhook_info,
                "sendMessage": self._send_message,
                "editMessageText": self._edit_message_text,
                "editMessageReplyMarkup": self._edit_message_reply_markup,
                "answerCallbackQuery": self._answer_callback_query,
                "setMyCommands": self._set_my_commands,
                "getMyCommands": self._get_my_commands,
                "deleteMyCommands": self._delete_my_commands,
                "sendDocument": self._send_document,
                "sendPhoto": self._send_photo,
                "copyMessage": self._copy_message,
                "sendChatAction": self._send_chat_action,
                "getFile": self._get_file,
                "close": self._ok,
                "logOut": self._ok,
            }.items()
        }

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        app = web.Application(client_max_size=50 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]
        self._session = aiohttp.ClientSession()

    async def stop(self) -> None:
        self._closing = True
        self._notify()  # wakes long polls and hanging requests so they answer now
        await self._stop_webhook_delivery()
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        """Like ``http://127.0.0.1:PORT``."""
        if not self._port:
            raise RuntimeError("FakeBotApi is not started")
        return f"http://127.0.0.1:{self._port}"

    @property
    def base_url(self) -> str:
        """What to pass as python-telegram-bot's ``base_url``."""
        return f"{self.url}/bot"

    # ----------------------------------------------------------- simulated users

    def send_text(
        self,
        user_id: int,
        text: str,
        *,
        first_name: str = "Ana",
        language_code: str = "en",
        chat_type: str = "private",
        chat_id: int | None = None,
    ) -> int:
        """A user sends `text`; in groups, `chat_id` defaults to ``-user_id``."""
        content: JSON = {"text": text}
        command = _BOT_COMMAND_RE.match(text)
        if command:
            content["entities"] = [
                {"type": "bot_command", "offset": 0, "length": utf16_length(command.group())}
            ]
        user = self._remember_user(user_id, first_name, language_code)
        message = self._user_message(user, chat_type, chat_id, content)
        return self._enqueue({"message": message})

    def send_sticker(self, user_id: int) -> int:
        sticker = {
            "file_id": "CAACAgIAAxkBAAIBfakeSticker",
            "file_unique_id": "AgADfakeSticker",
            "type": "regular",
            "width": 512,
            "height": 512,
            "is_animated": False,
            "is_video": False,
            "emoji": "👍",
        }
        message = self._user_message(
            self._known_user(user_id), "private", None, {"sticker": sticker}
        )
        return self._enqueue({"message": message})

    def send_file(self, user_id: int, file_name: str, data: bytes, *,
                  caption: str | None = None) -> int:
        """The user sends a document (a file) to the bot; the bot can fetch it with getFile
        and a download of the file path."""
        file_id = f"BQACAgIAAxkBAAIBfakeDoc{len(self.user_files)}"
        self.user_files[file_id] = data
        content: JSON = {"document": {"file_id": file_id, "file_unique_id": f"u{file_id}",
                                      "file_name": file_name, "mime_type": "application/yaml",
                                      "file_size": len(data)}}
        if caption is not None:
            content["caption"] = caption
        message = self._user_message(self._known_user(user_id), "private", None, content)
        return self._enqueue({"message": message})

    def user_file(self, file_path: str) -> bytes:
        """The bytes of a file a user sent, by the path getFile gave."""
        return self.user_files[file_path.rsplit("/", 1)[-1]]

    def send_photo(self, user_id: int, *, caption: str | None = None) -> int:
        sizes = [
            {
                "file_id": f"AgACAgIAAxkBAAIBfakePhoto{side}",
                "file_unique_id": f"AQADfakePhoto{side}",
                "width": side,
                "height": side,
                "file_size": side * 40,
            }
            for side in (90, 320, 800)
        ]
        content: JSON = {"photo": sizes}
        if caption is not None:
            content["caption"] = caption
        message = self._user_message(self._known_user(user_id), "private", None, content)
        return self._enqueue({"message": message})

    def send_media(self, user_id: int, kind: str, *, caption: str | None = None) -> int:
        """A user sends a voice message, an audio file, a document, a video or a video note
        (``kind`` is the Message field) to the bot's private chat."""
        number = len(self._messages) + 1
        media: JSON = {"file_id": f"AwACAgIAAxkBfake{kind}{number:06d}",
                       "file_unique_id": f"AgADfake{kind}{number:06d}", "file_size": 4000}
        if kind in ("voice", "audio", "video", "video_note"):
            media["duration"] = 7
        if kind in ("video", "video_note"):
            media.update({"width": 240, "height": 240} if kind == "video" else {"length": 240})
        if kind == "document":
            media.update({"file_name": "notes.pdf", "mime_type": "application/pdf"})
        content: JSON = {kind: media}
        if caption is not None:
            content["caption"] = caption
        message = self._user_message(self._known_user(user_id), "private", None, content)
        return self._enqueue({"message": message})

    def press_button(self, user_id: int, message_id: int, data: str, *,
                     chat_id: int | None = None) -> int:
        """The user presses the inline button with callback `data` on a message the bot sent
        (to their private chat, or to the group chat ``chat_id``)."""
        chat = user_id if chat_id is None else chat_id
        message = self._messages.get((chat, message_id))
        if message is None or not message["from"]["is_bot"]:
            raise AssertionError(f"the bot sent no message {message_id} to chat {chat}")
        if data not in _callback_datas(message):
            raise AssertionError(
                f"message {message_id} has no button with callback_data {data!r}; "
                f"it has {_callback_datas(message)!r}"
            )
        query_id = str(4_000_000_000_000 + self._next_callback_id)
        self._next_callback_id += 1
        self._open_callbacks.add(query_id)
        query = {
            "id": query_id,
            "from": self._known_user(user_id),
            "message": message,
            "chat_instance": str(-user_id * 7919),
            "data": data,
        }
        return self._enqueue({"callback_query": query})

    def bot_membership(self, chat_id: int, by_user: int, status: str, *,
                       chat_type: str = "group") -> int:
        """`by_user` adds the bot to a group chat (``status`` "member" or "administrator")
        or removes it ("left", "kicked"): a ``my_chat_member`` update, as Telegram sends."""
        user = self._known_user(by_user)
        chat = self._chats.setdefault(chat_id, {"id": chat_id, "type": chat_type,
                                                "title": "Test group"})
        before = "left" if status in ("member", "administrator") else "member"

        def member(state: str) -> JSON:
            extra: JSON = {"until_date": 0} if state == "kicked" else {}
            if state == "administrator":
                extra = {"can_be_edited": False, "is_anonymous": False,
                         "can_manage_chat": True, "can_delete_messages": True,
                         "can_manage_video_chats": True, "can_restrict_members": True,
                         "can_promote_members": False, "can_change_info": True,
                         "can_invite_users": True, "can_post_stories": False,
                         "can_edit_stories": False, "can_delete_stories": False}
            return {"status": state, "user": self._bot_user(), **extra}

        return self._enqueue({"my_chat_member": {
            "chat": chat, "from": user, "date": int(time.time()),
            "old_chat_member": member(before), "new_chat_member": member(status)}})

    def migrate_group(self, chat_id: int, new_chat_id: int, by_user: int) -> int:
        """A group becomes a supergroup: the service message in the old chat that carries
        ``migrate_to_chat_id``."""
        message = self._user_message(self._known_user(by_user), "group", chat_id,
                                     {"migrate_to_chat_id": new_chat_id})
        self._chats[new_chat_id] = {"id": new_chat_id, "type": "supergroup",
                                    "title": "Test group"}
        return self._enqueue({"message": message})

    def send_raw(self, update: JSON) -> int:
        """Enqueue any update dict (unknown types, fuzzing); update_id is added if missing."""
        update = copy.deepcopy(update)
        update_id = update.setdefault("update_id", self._next_update_id)
        if not isinstance(update_id, int):
            raise TypeError("update_id must be an int")
        self._next_update_id = max(self._next_update_id, update_id + 1)
        return self._enqueue(update)

    def redeliver(self, update_id: int) -> int:
        """Enqueue an identical copy of an earlier update (same update_id), as Telegram may."""
        if update_id not in self._history:
            raise KeyError(f"no update {update_id} was ever enqueued")
        self._queue.append(_Pending(copy.deepcopy(self._history[update_id]), sticky=True))
        self._notify()
        return update_id

    @property
    def pending_updates(self) -> int:
        """Updates not yet confirmed by getUpdates' offset or delivered to the webhook."""
        return len(self._queue)

    # ---------------------------------------------------------- failure injection

    def fail_next(
        self,
        method: str,
        *,
        status: int,
        times: int = 1,
        retry_after: int | None = None,
        description: str | None = None,
    ) -> None:
        """The next `times` calls of `method` answer `status` (429 carries retry_after)."""
        if status == 429:
            retry_after = retry_after if retry_after is not None else 1
            description = description or f"Too Many Requests: retry after {retry_after}"
        else:
            description = description or HTTPStatus(status).phrase
        self._failures[method.lower()].append(_Failure(status, description, retry_after, times))

    def block(self, chat_id: int) -> None:
        """The user blocked the bot: every send to `chat_id` answers 403."""
        self._blocked.add(chat_id)

    def unblock(self, chat_id: int) -> None:
        self._blocked.discard(chat_id)

    def hang(self, method: str, seconds: float, *, times: int | None = None) -> None:
        """Calls of `method` wait `seconds` before answering (until cleared, or `times` calls)."""
        self._hangs[method.lower()] = _Hang(seconds, times)

    def enforce_limits(self, *, per_bot: float = 30, per_chat: float = 1.0,
                       chat_burst: int = 3, paid_per_bot: float = 1000) -> None:
        """From now on keep Telegram's send limits: beyond ``per_bot`` messages in any one
        second (``paid_per_bot`` with ``allow_paid_broadcast``), or ``per_chat`` a second
        to one chat after a burst of ``chat_burst``, a send is refused with 429 and
        ``retry_after`` (whole seconds, as Telegram does). Only accepted sends count."""
        self._limits = _Limits(per_bot, per_chat, chat_burst, paid_per_bot)

    def _apply_limits(self, method: str, params: JSON, now: float) -> None:
        limits = self._limits
        if limits is None or method.lower() not in _SENDING:
            return
        paid = str(params.get("allow_paid_broadcast", "")).lower() in ("true", "1")
        window = self._paid_window if paid else self._bot_window
        most = limits.paid_per_bot if paid else limits.per_bot
        while window and window[0] <= now - 1.0:
            window.popleft()
        try:
            chat = int(params.get("chat_id", 0))
        except (TypeError, ValueError):
            chat = 0
        tokens, since = self._chat_tokens.get(chat, (float(limits.chat_burst), now))
        tokens = min(float(limits.chat_burst), tokens + (now - since) * limits.per_chat)
        if len(window) >= most:
            wait, reason = window[0] + 1.0 - now, "bot"
        elif tokens < 1:
            wait, reason = (1 - tokens) / limits.per_chat, "chat"
        else:
            window.append(now)
            self._chat_tokens[chat] = (tokens - 1, now)
            return
        self.rate_limited += 1
        self.rate_limited_by[reason] += 1
        retry_after = max(1, math.ceil(wait))
        raise ApiError(429, f"Too Many Requests: retry after {retry_after}",
                       {"retry_after": retry_after})

    def clear_failures(self) -> None:
        self._failures.clear()
        self._hangs.clear()
        self._blocked.clear()

    # ------------------------------------------------------------------ recording

    def messages_to(self, chat_id: int) -> list[SentMessage]:
        return list(self.sent.get(chat_id, []))

    def calls(self, method: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.method.lower() == method.lower()]

    def commands_for(self, *, scope: JSON | None = None, language_code: str = "") -> list[JSON]:
        return self.commands.get((_scope_key(scope), language_code), [])

    async def wait_for_messages(
        self, chat_id: int, count: int, timeout: float = 5.0
    ) -> list[SentMessage]:
        """Return the chat's messages once at least `count` were sent there."""
        if not await self._wait_until(lambda: len(self.sent.get(chat_id, [])) >= count, timeout):
            received = [m.text if m.kind == "text" else f"<{m.kind}>" for m in self.sent[chat_id]]
            raise AssertionError(
                f"expected {count} message(s) to chat {chat_id} within {timeout}s, "
                f"got {len(received)}: {received!r}"
            )
        return self.messages_to(chat_id)

    async def wait_for_calls(
        self, method: str, count: int = 1, timeout: float = 5.0
    ) -> list[RecordedRequest]:
        """Return the requests for `method` once at least `count` arrived."""
        if not await self._wait_until(lambda: len(self.calls(method)) >= count, timeout):
            raise AssertionError(
                f"expected {count} {method} call(s) within {timeout}s, "
                f"got {len(self.calls(method))}"
            )
        return self.calls(method)

    async def wait_idle(self, timeout: float = 5.0) -> None:
        """Wait until the bot has consumed (confirmed) every enqueued update."""
        if not await self._wait_until(lambda: not self._queue, timeout):
            pending = [entry.update["update_id"] for entry in self._queue]
            raise AssertionError(f"updates still pending after {timeout}s: {pending}")

    # --------------------------------------------------------------- internals

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _wait_until(self, predicate: Callable[[], bool], timeout: float | None) -> bool:
        """Wait until `predicate()` holds; False if `timeout` seconds pass first."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not predicate():
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                return predicate()
        return True

    def _enqueue(self, update: JSON) -> int:
        update_id = update.setdefault("update_id", self._next_update_id)
        self._next_update_id = max(self._next_update_id, update_id + 1)
        update = copy.deepcopy(update)  # later edits of stored messages must not leak in
        self._history[update_id] = update
        self._queue.append(_Pending(copy.deepcopy(update)))
        self._notify()
        return int(update_id)

    def _remember_user(self, user_id: int, first_name: str, language_code: str) -> JSON:
        user = {
            "id": user_id,
            "is_bot": False,
            "first_name": first_name,
            "language_code": language_code,
        }
        self._users[user_id] = user
        return user

    def _known_user(self, user_id: int) -> JSON:
        return self._users.get(user_id) or self._remember_user(user_id, "Ana", "en")

    def _user_message(self, user: JSON, chat_type: str, chat_id: int | None, content: JSON) -> JSON:
        if chat_type == "private":
            chat: JSON = {"id": user["id"], "type": "private", "first_name": user["first_name"]}
        else:
            chat = {"id": chat_id or -user["id"], "type": chat_type, "title": "Test group"}
        self._chats[chat["id"]] = chat
        message = {
            "message_id": self._new_message_id(chat["id"]),
            "from": user,
            "chat": chat,
            "date": int(time.time()),
            **content,
        }
        self._messages[(chat["id"], message["message_id"])] = message
        return message

    def _new_message_id(self, chat_id: int) -> int:
        message_id = self._next_message_id[chat_id]
        self._next_message_id[chat_id] += 1
        return message_id

    def _chat(self, chat_id: int) -> JSON:
        if chat_id in self._chats:
            return self._chats[chat_id]
        if chat_id > 0:
            return {"id": chat_id, "type": "private", "first_name": "User"}
        return {"id": chat_id, "type": "supergroup", "title": "Test group"}

    def _bot_user(self) -> JSON:
        return {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": "Coachbot (test)",
            "username": self.bot_username,
        }

    def _target_chat(self, params: JSON) -> int:
        chat_id = params.get("chat_id")
        if chat_id is None or chat_id == "":
            raise _bad_request("chat_id is empty")
        if not isinstance(chat_id, int) or isinstance(chat_id, bool):
            raise _bad_request("chat not found")
        if chat_id in self._blocked:
            raise ApiError(403, "Forbidden: bot was blocked by the user")
        return chat_id

    def _checked_text(
        self, text: Any, parse_mode: str | None, *, limit: int, what: str, required: bool
    ) -> str:
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise _bad_request(f"{what} must be a string")
        plain = _visible_text(text, parse_mode)
        if required and not plain.strip():
            raise _bad_request(f"{what} text is empty")
        if utf16_length(plain.strip()) > limit:
            raise _bad_request(f"{what} is too long")
        return plain

    def _store_bot_message(
        self,
        chat_id: int,
        content: JSON,
        params: JSON,
        *,
        kind: str,
        raw_text: str | None = None,
    ) -> JSON:
        markup = _check_reply_markup(params.get("reply_markup"))
        message: JSON = {
            "message_id": self._new_message_id(chat_id),
            "from": self._bot_user(),
            "chat": self._chat(chat_id),
            "date": int(time.time()),
            **content,
        }
        reply = params.get("reply_parameters") or {}
        if "reply_to_message_id" in params:
            reply = {"message_id": int(params["reply_to_message_id"])}
        if reply:
            replied = self._messages.get((chat_id, int(reply.get("message_id", 0))))
            if replied is not None:
                message["reply_to_message"] = replied
            elif not reply.get("allow_sending_without_reply"):
                raise _bad_request("message to be replied not found")
        if _inline_keyboard(markup):
            message["reply_markup"] = markup
        self._messages[(chat_id, message["message_id"])] = message
        sent = SentMessage(
            chat_id=chat_id,
            message_id=message["message_id"],
            text=raw_text,
            reply_markup=markup,
            parse_mode=params.get("parse_mode"),
            time=time.monotonic(),
            kind=kind,
            caption=params.get("caption"),
        )
        self.sent[chat_id].append(sent)
        self._sent_index[(chat_id, sent.message_id)] = sent
        self._notify()
        return message

    def _message_to_edit(self, params: JSON) -> tuple[JSON, SentMessage]:
        chat_id = self._target_chat(params)
        if "message_id" not in params:
            raise _bad_request("message identifier is not specified")
        key = (chat_id, int(params["message_id"]))
        if key not in self._messages:
            raise _bad_request("message to edit not found")
        if key not in self._sent_index:
            raise _bad_request("message can't be edited")
        return self._messages[key], self._sent_index[key]

    def _store_upload(self, params: JSON, name: str, default_mime: str) -> _StoredFile:
        value = params.get(name)
        if isinstance(value, UploadedFile):
            number = len(self._files) + 1
            stored = _StoredFile(
                file_id=f"BQACAgIAAxkBAAI{number:08d}fake",
                file_unique_id=f"AgAD{number:06d}",
                file_name=value.filename,
                content=value.content,
                mime_type=value.content_type or default_mime,
            )
            self._files[stored.file_id] = stored
            return stored
        if isinstance(value, str) and value in self._files:
            return self._files[value]
        if isinstance(value, str) and value.startswith(("http://", "https://")):
            file_name = value.rsplit("/", 1)[-1] or None
            stored = _StoredFile(f"url:{value}", f"url:{value}", file_name, b"", default_mime)
            self._files[stored.file_id] = stored
            return stored
        if value:
            raise _bad_request("wrong file identifier/HTTP URL specified")
        raise _bad_request(f"there is no {name} in the request")

    def _record_file(self, stored: _StoredFile, message: JSON, caption: str | None) -> SentFile:
        return SentFile(
            chat_id=message["chat"]["id"],
            message_id=message["message_id"],
            file_id=stored.file_id,
            file_name=stored.file_name,
            content=stored.content,
            mime_type=stored.mime_type,
            caption=caption,
            time=time.monotonic(),
        )

    def _is_allowed(self, update: JSON) -> bool:
        kind = _update_type(update)
        if self._allowed_updates:
            return kind in self._allowed_updates
        return kind not in _OPT_IN_UPDATES

    def _set_allowed_updates(self, params: JSON) -> None:
        allowed = params.get("allowed_updates")
        if isinstance(allowed, list):
            self._allowed_updates = [str(kind) for kind in allowed]

    def _has_deliverable(self) -> bool:
        """Whether an update is ready; like Telegram, forgets updates the bot did not ask for."""
        self._queue = [entry for entry in self._queue if self._is_allowed(entry.update)]
        return bool(self._queue)

    # -------------------------------------------------------------------- HTTP

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        record = RecordedRequest(method, {}, time.monotonic())
        self.requests.append(record)
        try:
            record.params = await _read_params(request)
        except ApiError as error:
            record.status = error.status
            return web.json_response(error.to_json(), status=error.status)
        status, body = await self._answer(record, request.match_info["token"])
        return web.json_response(body, status=status)

    async def call(self, token: str, method: str, params: JSON) -> tuple[int, JSON]:
        """A Bot API request without HTTP (`params` as a form would carry them, every value a
        string): its status and JSON answer, recorded as a request over HTTP is. Used by the
        in-process client (tests/inprocess.py)."""
        record = RecordedRequest(method, {}, time.monotonic())
        self.requests.append(record)
        try:
            record.params = {key: _normalize(key, value) if isinstance(value, str) else value
                             for key, value in params.items()}
        except ApiError as error:
            record.status = error.status
            return error.status, error.to_json()
        return await self._answer(record, token)

    def take_updates(self) -> list[JSON]:
        """Every update waiting for the bot, taken off the queue (as a confirmed getUpdates
        would): the in-process client hands them to the application itself."""
        taken, self._queue = self._queue, []
        return [entry.update for entry in taken]

    async def _answer(self, record: RecordedRequest, token: str) -> tuple[int, JSON]:
        method = record.method
        try:
            self._notify()
            if token != self.token:
                raise ApiError(401, "Unauthorized")
            await self._apply_hang(method)
            self._apply_injected_failure(method)
            self._apply_limits(method, record.params, self.limits_clock())
            handler = self._handlers.get(method.lower())
            if handler is None:
                raise ApiError(404, "Not Found")
            try:
                result = await handler(record.params)
            except (ValueError, TypeError) as exc:  # a parameter of the wrong type
                raise _bad_request(str(exc)) from exc
        except ApiError as error:
            record.status = error.status
            return error.status, error.to_json()
        record.status = 200
        return 200, {"ok": True, "result": result}

    async def _apply_hang(self, method: str) -> None:
        hang = self._hangs.get(method.lower())
        if hang is None:
            return
        if hang.remaining is not None:
            hang.remaining -= 1
            if hang.remaining <= 0:
                del self._hangs[method.lower()]
        await self._wait_until(lambda: self._closing, hang.seconds)

    def _apply_injected_failure(self, method: str) -> None:
        failures = self._failures.get(method.lower())
        if not failures:
            return
        failure = failures[0]
        failure.remaining -= 1
        if failure.remaining <= 0:
            failures.pop(0)
        parameters = {"retry_after": failure.retry_after} if failure.retry_after else None
        raise ApiError(failure.status, failure.description, parameters)

    # ------------------------------------------------------------ API methods

    async def _ok(self, params: JSON) -> bool:
        return True

    async def _get_file(self, params: JSON) -> JSON:
        file_id = str(params.get("file_id"))
        if file_id not in self.user_files:
            raise ApiError(400, "Bad Request: invalid file_id")
        return {"file_id": file_id, "file_unique_id": f"u{file_id}",
                "file_size": len(self.user_files[file_id]), "file_path": f"documents/{file_id}"}

    async def _get_me(self, params: JSON) -> JSON:
        return {
            **self._bot_user(),
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }

    async def _get_updates(self, params: JSON) -> list[JSON]:
        if self.webhook_url:
            raise ApiError(
                409,
                "Conflict: can't use getUpdates method while webhook is active; "
                "use deleteWebhook to delete the webhook first",
            )
        offset = int(params.get("offset") or 0)
        limit = min(max(int(params.get("limit") or 100), 1), 100)
        timeout = max(float(params.get("timeout") or 0), 0.0)
        if offset < 0:
            self._queue = self._queue[offset:]
        elif offset:
            self._queue = [e for e in self._queue if e.update["update_id"] >= offset or e.sticky]
        self._set_allowed_updates(params)
        self._notify()

        self._poll_generation += 1
        generation = self._poll_generation
        await self._wait_until(
            lambda: self._poll_generation != generation or self._closing or self._has_deliverable(),
            timeout,
        )
        if self._poll_generation != generation:
            reason = "setWebhook" if self.webhook_url else "other getUpdates"
            raise ApiError(
                409,
                f"Conflict: terminated by {reason} request; "
                "make sure that only one bot instance is running",
            )
        batch = self._queue[:limit]
        for entry in batch:
            entry.sticky = False
        return [entry.update for entry in batch]

    async def _set_webhook(self, params: JSON) -> bool:
        url = str(params.get("url") or "")
        if not url:
            return await self._delete_webhook(params)
        if params.get("drop_pending_updates"):
            self._queue.clear()
        self.webhook_url = url
        self.webhook_secret = params.get("secret_token") or None
        self._set_allowed_updates(params)
        self._poll_generation += 1  # a waiting getUpdates is terminated
        self._notify()
        if self._webhook_task is None:
            self._webhook_task = asyncio.create_task(self._deliver_to_webhook())
        return True

    async def _delete_webhook(self, params: JSON) -> bool:
        if params.get("drop_pending_updates"):
            self._queue.clear()
        self.webhook_url = ""
        self.webhook_secret = None
        await self._stop_webhook_delivery()
        return True

    async def _get_webhook_info(self, params: JSON) -> JSON:
        info: JSON = {
            "url": self.webhook_url,
            "has_custom_certificate": False,
            "pending_update_count": len(self._queue),
        }
        if self.webhook_url:
            info["max_connections"] = 40
            info["ip_address"] = "127.0.0.1"
        if self._allowed_updates:
            info["allowed_updates"] = self._allowed_updates
        if self._webhook_last_error:
            info["last_error_date"], info["last_error_message"] = self._webhook_last_error
        return info

    async def _send_message(self, params: JSON) -> JSON:
        chat_id = self._target_chat(params)
        text = params.get("text")
        parse_mode = params.get("parse_mode")
        plain = self._checked_text(
            text, parse_mode, limit=MAX_MESSAGE_LENGTH, what="message", required=True
        )
        return self._store_bot_message(chat_id, {"text": plain}, params, kind="text", raw_text=text)

    async def _edit_message_text(self, params: JSON) -> JSON:
        message, sent = self._message_to_edit(params)
        if sent.kind != "text":
            raise _bad_request("there is no text in the message to edit")
        text = params.get("text")
        plain = self._checked_text(
            text, params.get("parse_mode"), limit=MAX_MESSAGE_LENGTH, what="message", required=True
        )
        # Like Telegram, an edit without reply_markup removes the inline keyboard.
        markup = _inline_keyboard(_check_reply_markup(params.get("reply_markup")))
        if text == sent.text and markup == _inline_keyboard(sent.reply_markup):
            raise _bad_request(
                "message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message"
            )
        message["text"] = plain
        sent.text, sent.parse_mode = text, params.get("parse_mode")
        return self._apply_edit(message, sent, markup)

    async def _edit_message_reply_markup(self, params: JSON) -> JSON:
        message, sent = self._message_to_edit(params)
        markup = _check_reply_markup(params.get("reply_markup"))
        if markup is not None and "inline_keyboard" not in markup:
            raise _bad_request("inline keyboard expected")
        if markup == _inline_keyboard(sent.reply_markup):
            raise _bad_request(
                "message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message"
            )
        return self._apply_edit(message, sent, markup)

    def _apply_edit(self, message: JSON, sent: SentMessage, markup: JSON | None) -> JSON:
        if markup is None:
            message.pop("reply_markup", None)
        else:
            message["reply_markup"] = markup
        message["edit_date"] = int(time.time())
        sent.reply_markup = markup
        sent.edited = True
        self._notify()
        return message

    async def _answer_callback_query(self, params: JSON) -> bool:
        query_id = str(params.get("callback_query_id", ""))
        if query_id not in self._open_callbacks:
            raise _bad_request(
                "query is too old and response timeout expired or query ID is invalid"
            )
        text = params.get("text")
        if text is not None and utf16_length(str(text)) > MAX_CALLBACK_ANSWER_LENGTH:
            raise _bad_request("MESSAGE_TOO_LONG")
        self._open_callbacks.discard(query_id)
        self.answered_callbacks.append(
            AnsweredCallback(
                callback_query_id=query_id,
                text=text,
                show_alert=bool(params.get("show_alert", False)),
                url=params.get("url"),
                time=time.monotonic(),
            )
        )
        self._notify()
        return True

    async def _set_my_commands(self, params: JSON) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list) or len(commands) > 100:
            raise _bad_request("can't parse commands JSON object")
        for command in commands:
            if not isinstance(command, dict):
                raise _bad_request("can't parse BotCommand JSON object")
            if not _COMMAND_NAME_RE.fullmatch(str(command.get("command", ""))):
                raise _bad_request("BOT_COMMAND_INVALID")
            if not 1 <= len(str(command.get("description", "")).strip()) <= 256:
                raise _bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
        key = (_scope_key(params.get("scope")), str(params.get("language_code") or ""))
        self.commands[key] = [
            {"command": c["command"], "description": c["description"]} for c in commands
        ]
        return True

    async def _get_my_commands(self, params: JSON) -> list[JSON]:
        key = (_scope_key(params.get("scope")), str(params.get("language_code") or ""))
        return self.commands.get(key, [])

    async def _delete_my_commands(self, params: JSON) -> bool:
        key = (_scope_key(params.get("scope")), str(params.get("language_code") or ""))
        self.commands.pop(key, None)
        return True

    async def _send_document(self, params: JSON) -> JSON:
        chat_id = self._target_chat(params)
        caption = params.get("caption")
        plain = self._checked_text(
            caption,
            params.get("parse_mode"),
            limit=MAX_CAPTION_LENGTH,
            what="message caption",
            required=False,
        )
        stored = self._store_upload(params, "document", "application/octet-stream")
        document = {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_size": len(stored.content),
        }
        if stored.file_name:
            document["file_name"] = stored.file_name
        if stored.mime_type:
            document["mime_type"] = stored.mime_type
        content: JSON = {"document": document}
        if plain:
            content["caption"] = plain
        message = self._store_bot_message(chat_id, content, params, kind="document")
        self.documents.append(self._record_file(stored, message, caption))
        return message

    async def _send_photo(self, params: JSON) -> JSON:
        chat_id = self._target_chat(params)
        caption = params.get("caption")
        plain = self._checked_text(
            caption,
            params.get("parse_mode"),
            limit=MAX_CAPTION_LENGTH,
            what="message caption",
            required=False,
        )
        stored = self._store_upload(params, "photo", "image/jpeg")
        sizes = [
            {
                "file_id": f"{stored.file_id}_{side}",
                "file_unique_id": f"{stored.file_unique_id}_{side}",
                "width": side,
                "height": side,
                "file_size": len(stored.content),
            }
            for side in (90, 320)
        ]
        content: JSON = {"photo": sizes}
        if plain:
            content["caption"] = plain
        message = self._store_bot_message(chat_id, content, params, kind="photo")
        self.photos.append(self._record_file(stored, message, caption))
        return message

    async def _copy_message(self, params: JSON) -> JSON:
        """copyMessage: the message ``message_id`` of chat ``from_chat_id`` (one a user sent,
        or one the bot sent) goes to ``chat_id`` as the bot's, without a link to it."""
        chat_id = self._target_chat(params)
        try:
            source_chat = int(params.get("from_chat_id", 0))
            source_id = int(params.get("message_id", 0))
        except (TypeError, ValueError):
            raise _bad_request("message to copy not found") from None
        source = self._messages.get((source_chat, source_id))
        if source is None:
            raise _bad_request("message to copy not found")
        content = {key: copy.deepcopy(value) for key, value in source.items()
                   if key not in ("message_id", "from", "chat", "date", "reply_markup",
                                  "reply_to_message", "entities", "caption_entities")}
        kinds = [kind for kind in ("photo", "document", "voice", "audio", "video",
                                   "video_note", "text") if kind in content]
        message = self._store_bot_message(chat_id, content, params,
                                          kind=kinds[0] if kinds else "other",
                                          raw_text=content.get("text"))
        self.copies.append((chat_id, source_chat, source_id))
        return {"message_id": message["message_id"]}

    async def _send_chat_action(self, params: JSON) -> bool:
        self._target_chat(params)
        if params.get("action") not in _CHAT_ACTIONS:
            raise _bad_request("wrong parameter action in request")
        return True

    # ----------------------------------------------------------------- webhook

    async def _deliver_to_webhook(self) -> None:
        """POST queued updates to the webhook one at a time, retrying until it answers 2xx."""
        while True:
            await self._wait_until(lambda: bool(self.webhook_url) and self._has_deliverable(), None)
            entry = self._queue[0]
            status = await self._post_update(entry.update)
            self.webhook_deliveries.append(
                WebhookDelivery(entry.update["update_id"], status, time.monotonic())
            )
            if status is not None and 200 <= status < 300:
                if self._queue and self._queue[0] is entry:
                    self._queue.pop(0)
                self._notify()
            else:
                reason = f"Wrong response from the webhook: {status}" if status else "No response"
                self._webhook_last_error = (int(time.time()), reason)
                self._notify()
                await asyncio.sleep(self.webhook_retry_delay)

    async def _post_update(self, update: JSON) -> int | None:
        assert self._session is not None, "FakeBotApi is not started"
        headers = {}
        if self.webhook_secret:
            headers["X-Telegram-Bot-Api-Secret-Token"] = self.webhook_secret
        try:
            async with self._session.post(
                self.webhook_url,
                json=update,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=10),
            ) as response:
                await response.read()
                return response.status
        except (aiohttp.ClientError, TimeoutError):
            return None

    async def _stop_webhook_delivery(self) -> None:
        task, self._webhook_task = self._webhook_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
