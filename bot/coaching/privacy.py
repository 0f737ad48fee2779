"""What a client's copy of their data says about itself: a label for every kind of row, in
their language, and how often they may ask for one; and /privacy, the short version of
docs/privacy.md a client reads before they agree (and at any time after)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from bot.config import DEFAULT_RETENTION_DAYS
from bot.i18n import N_, Translator

#: How often one user may ask for a copy of their data (it is built from every row).
EXPORT_EVERY = timedelta(hours=1)

#: What each table of an export holds, as a client would read it. Every table that refers to a
#: user has one (a test walks the schema).
TABLE_LABELS: dict[str, str] = {
    "users": N_("Your profile: language, how you chose to be addressed, time zone, check-in "
                "time and days, quiet hours, pause, "
                "whether you agreed that I keep your answers and when, and the day you last "
                "wrote to me."),
    "goals": N_("Your goals, with why they matter to you and how far you are."),
    "answers": N_("Every answer you gave me, with the conversation it belongs to and when you "
                  "gave it."),
    "conversations": N_("Where you are in the current conversation."),
    "processed_updates": N_("The ID numbers of your messages that I have already handled, so "
                            "that none is handled twice. They contain nothing you wrote."),
    "coach_links": N_("The coaches you share your progress with (or shared with), and since "
                      "when."),
    "invites": N_("Invitation links you made or used."),
    "exercises": N_("Exercises you wrote, if you are a coach."),
    "assignments": N_("Exercises a coach gave you, or that you gave your clients."),
    "planned_checkins": N_("The check-ins and exercises planned for you, and what became of "
                           "them."),
    "outbox": N_("Messages I sent you, and messages about you that I sent to your coach "
                 "(progress reports, charts and crisis notices, which never contain your "
                 "words)."),
    "actions": N_("What you said you would do, in your words, by when, and whether you did "
                  "it."),
    "coaching_sessions": N_("The sessions agreed with your coach: when, how long, where or "
                            "how, and whether they took place."),
    "coach_events": N_("What your coach was told about, without any content: an exercise "
                       "done, partly done or skipped, a goal reached, a few days without an "
                       "answer, or that I saw signs of a crisis."),
    "coach_messages": N_("Messages between you and your coach through me, both ways."),
    "session_notes": N_("Notes you kept for your sessions: your words, or the voice "
                        "messages, photos and files you sent me (by their Telegram reference), "
                        "and whether your coach was to see them."),
    "coach_notes": N_("Notes your coach wrote about you for themselves. You see them here "
                      "because they are about you."),
    "groups": N_("The groups you coach, if you are a coach: their names and links."),
    "group_contributions": N_("What you said you would contribute and commit to for your "
                              "team's shared goal, and whether your coach may see it."),
    "group_members": N_("The groups you joined or left, when, and what you let the coach "
                        "see."),
    "group_sessions": N_("The sessions you planned with your groups, if you are a coach: "
                         "when, how long, and where or how."),
    "measures": N_("What your coach asks you to rate or count, with its target, or what you "
                   "ask your clients for, if you are a coach."),
    "measure_values": N_("Your ratings and numbers for those measures, and the scores you gave "
                         "in exercises such as the wheel of life, with the date and time of each."),
    "programme_runs": N_("The programmes a coach gave you, or that you gave your clients, and "
                         "whether they are running, paused or cancelled."),
    "coach_dialogues": N_("Dialogues you wrote and sent me, if you are a coach."),
}


def labelled(data: dict[str, Any], tr: Translator) -> dict[str, Any]:
    """An export with, first, what each of its parts is, in the reader's language."""
    about = {name: tr.gettext(TABLE_LABELS[name]) for name in data if name in TABLE_LABELS}
    intro = tr.gettext("Everything I have stored about you. Each part is explained under "
                       "“about”.")
    return {"about_this_file": intro, "about": about, **data}


def export_document(data: dict[str, Any], tr: Translator) -> bytes:
    """The file a client gets: their labelled data as JSON (CPU-bound: run it off the loop)."""
    return json.dumps(labelled(data, tr), ensure_ascii=False, indent=2, default=str).encode()


@dataclass(frozen=True)
class PrivacyFacts:
    """What /privacy states that depends on how the bot is run (``bot.config.Settings``)."""

    #: Days a client's history is kept once they stopped using the bot (the retention's
    #: ``client_history``: ``Store.prune`` erases them then).
    history_days: int = DEFAULT_RETENTION_DAYS["client_history"]
    #: Whether an encryption key is set (``COACHBOT_ENCRYPTION_KEY``): without one, what
    #: clients write is stored in plain text, and /privacy does not say otherwise.
    encrypted: bool = False


def privacy_summary(tr: Translator, facts: PrivacyFacts) -> list[str]:
    """/privacy: what is kept, who sees it, for how long, and /export and /delete with what
    they cannot take back, one message each; true to the code (docs/privacy.md)."""
    kept = tr.gettext(
        "What I keep. Until you agree, only your Telegram id, your language, how far you got "
        "in my first questions and the invitation link you opened, if any; if you say no, I "
        "delete even that. Once you agree: your "
        "first name, time zone, check-in time and days, and what you do with me: your goals, your "
        "answers (including your mood ratings), your check-ins, your sessions and the notes "
        "you choose to keep. If I notice signs that you may be in crisis, I keep a record "
        "that I noticed them, but not your words.")
    if facts.encrypted:
        kept += " " + tr.gettext("Your name, your words and your ratings are stored "
                                 "encrypted.")
    return [
        kept,
        tr.gettext(
            "Who sees it: you. A coach sees only what you agree to share with them, from the "
            "day you accept their invitation. Two limits to this: if you share your progress "
            "with a coach and I notice signs that you may be in crisis, I tell your coach, "
            "without any of your words, so that they can reach out to you; and the people who "
            "run me can access the database, as with any online service. You can stop sharing "
            "at any time with /coach."),
        tr.ngettext(
            "How long: I keep it while you use me or share your progress with a coach. When "
            "{days} day has passed since you last wrote or answered (or since the "
            "sharing of your progress with a coach ended, if that was later), I delete "
            "everything about you.",
            "How long: I keep it while you use me or share your progress with a coach. When "
            "{days} days have passed since you last wrote or answered (or since the "
            "sharing of your progress with a coach ended, if that was later), I delete "
            "everything about you.",
            facts.history_days).format(days=tr.number(facts.history_days)),
        tr.gettext(
            "/export sends you a file with everything I keep about you. /delete deletes it "
            "all, at once and for good. What /delete cannot take back: anything already sent "
            "to your coach (a note or a session preparation you chose to share, your replies, "
            "reports on your progress) "
            "stays in their Telegram chat, and backups of the database keep a copy for as "
            "long as the people who run me keep them."),
    ]
