"""Groups on Telegram: a coach's /newgroup, /groups (members, figures, assigning to the
whole group, linking the group's chat), a member's joining in private and /leave; and the
group's own Telegram chat, where the bot posts only what is for everyone.

Every button is checked again in the domain layer (the coach's own group, the member's own
membership), so forged button data gets nowhere. In a group chat the bot never shows what
anyone wrote to it privately, and answers a command only with a pointer to the private chat.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from babel.numbers import format_decimal, format_percent
from sqlalchemy import select
from telegram import ChatMemberUpdated, Update
from telegram.constants import ChatMemberStatus
from telegram.error import TelegramError

from bot.coaching import coach_errors, contracts, group_figures, group_sessions, groups
from bot.coaching.conversation import Start, converse, enqueue_replies
from bot.coaching.link_end import announce_link_end
from bot.coaching.sessions import BUTTON as SESSION_BUTTON
from bot.coaching.sessions import GROUP_TARGET, SessionChange, ask_brief_once
from bot.dialogue.model import DialogueSet
from bot.engine import Outcome, Reply
from bot.engine.state import Button
from bot.i18n import N_, SUPPORTED_LOCALES, Translator, normalize_locale, translator_for
from bot.i18n.languages import LANGUAGE_NAMES
from bot.store import Group, GroupKind, Store, User, Visibility
from bot.store import Turn as StoreTurn
from bot.telegram.coach import (
    CUSTOM,
    SCHEDULES,
    Respond,
    expiry_text,
    parse_id,
    say,
    schedule_label,
)

log = logging.getLogger(__name__)

JOIN_PREFIX = "group_"  # /start payload of a group's link: group_<code>
CHAT_PREFIX = "gchat_"  # /startgroup payload that links a group chat: gchat_<group id>
PROGRAMME_BUTTON = "gprg"  # gprg:<group>[:<programme>[:<hour>]]: a programme for the group
LANGUAGE_BUTTON = "glang"  # glang:<group>[:<locale>]: the language of the group's chat
HOURS = ("7", "8", "12", "18", "20")  # each member's own local time
KIND_LABELS = {GroupKind.TEAM: N_("Team"), GroupKind.COHORT: N_("Cohort")}
WITHHELD = "—"
STALE_BUTTON = N_("That button is no longer valid. Send /groups to start again.")
#: A member's shared part in the team's goal, by what they gave of it (either may be
#: skipped): (a contribution, a first step, its date).
CONTRIBUTION_LINES = {
    (True, True, False): N_("{name} will contribute: {contribution}; commits to: {commitment}"),
    (True, True, True): N_(
        "{name} will contribute: {contribution}; commits to: {commitment}, by {date}"),
    (False, True, False): N_("{name} commits to: {commitment}"),
    (False, True, True): N_("{name} commits to: {commitment}, by {date}"),
    (True, False, False): N_("{name} will contribute: {contribution}"),
}


def _chat_language(locale: str, tr: Translator) -> str:
    return tr.gettext("Language of the group's chat: {language}").format(
        language=tr.isolate(LANGUAGE_NAMES.get(locale, locale)))


def _signed(value: float, tr: Translator) -> str:
    """A change with its sign (+1.5, -0.5), and 0 as 0."""
    rounded = round(value, 1)
    return tr.number(0) if rounded == 0 else format_decimal(
        rounded, format="+#,##0.#;-#,##0.#", locale=tr.locale)


def _week_line(week: group_figures.WeekFigures, tr: Translator) -> str:
    def shown(value: float | None, fmt: Callable[[float], str]) -> str:
        return WITHHELD if value is None else tr.isolate(fmt(value))

    return tr.gettext("{date} · answered: {answered} of {members} · exercises done: "
                      "{completion} · average mood: {mood} · goal rating (1–10), average "
                      "change: {movement}").format(
        date=tr.isolate(tr.date(week.window.start.date(), "short")),
        answered=shown(week.participation, lambda v: tr.number(int(v))),
        members=tr.isolate(tr.number(week.cohort_size)),
        completion=shown(week.completion, lambda v: format_percent(v, locale=tr.locale)),
        mood=shown(week.mood, lambda v: tr.number(round(v, 1))),
        movement=shown(week.movement, lambda v: _signed(v, tr)))


@dataclass
class GroupHandlers:
    store: Store
    respond: Respond
    bot_username: Callable[[], str]
    known_exercises: Callable[[], frozenset[str]]
    exercise_choices: Callable[[StoreTurn, Translator], Awaitable[dict[str, str]]]
    dialogues: DialogueSet
    say_now: Callable[[int, str], Awaitable[None]]  # the sender's, within the budget

    def _link(self, payload: str, *, group_chat: bool = False) -> str:
        return f"https://t.me/{self.bot_username()}?{'startgroup' if group_chat else 'start'}" \
               f"={payload}"

    # -- the coach ------------------------------------------------------------------------

    async def new_group(self, t: StoreTurn, argument: str) -> None:
        tr = translator_for(t.user.locale)
        try:
            group, code = await groups.create_group(t.session, t.user_id, argument,
                                                    GroupKind.TEAM, t.now)
        except coach_errors.NotACoach:
            say(t, tr.gettext("Only coaches can make groups. If you are a coach, ask the "
                              "bot's administrator to set you up."))
            return None
        except coach_errors.InvalidGroupName:
            say(t, tr.gettext("Send /newgroup followed by the group's name (up to 64 "
                              "characters), for example: /newgroup Sales team"))
            return None
        say(t, tr.gettext("The group “{group}” is ready. Send this link to its members: each "
                          "of them joins in a private chat with me.\n{link}\n\nIs it a team "
                          "working towards a shared result, or a cohort going through a "
                          "programme together?").format(
                group=tr.words(group.name), link=self._link(JOIN_PREFIX + code)),
            tuple(Button(tr.gettext(KIND_LABELS[k]), f"gkind:{group.id}:{k.value}")
                  for k in GroupKind))
        return None

    async def _own_group(self, t: StoreTurn, raw_id: str) -> Group | None:
        tr = translator_for(t.user.locale)
        group_id = parse_id(raw_id)
        try:
            if group_id is None:
                raise coach_errors.NotYourGroup()
            return await groups.coach_group(t.session, t.user_id, group_id)
        except coach_errors.NotYourGroup:
            say(t, tr.gettext("I cannot find that group among yours. Send /groups to see "
                              "them."))
            return None

    async def _group_button(self, t: StoreTurn, rest: str, max_parts: int
                            ) -> tuple[Translator, list[str], Group] | None:
        """A group flow's button: its parts, once there are no more than the flow has and
        the group is the coach's own; else the coach is told why and None."""
        tr = translator_for(t.user.locale)
        parts = rest.split(":")
        if len(parts) > max_parts:
            say(t, tr.gettext(STALE_BUTTON))
            return None
        group = await self._own_group(t, parts[0])
        return None if group is None else (tr, parts, group)

    async def set_kind(self, t: StoreTurn, rest: str) -> None:
        raw_id, _, kind = rest.partition(":")
        if kind not in {k.value for k in GroupKind}:
            raw_id = ""
        group = await self._own_group(t, raw_id)
        if group is not None:
            group.kind = kind
            say(t, translator_for(t.user.locale).gettext("Saved. Send /groups to see your "
                                                         "groups."))

    async def list_groups(self, t: StoreTurn, argument: str) -> None:
        tr = translator_for(t.user.locale)
        mine = await groups.groups_of(t.session, t.user_id)
        if not mine:
            say(t, tr.gettext("You have no groups yet. Send /newgroup followed by a name to "
                              "make one."))
            return None
        say(t, tr.gettext("Your groups. Pick one to see its members and figures:"), tuple(
            Button(f"{tr.words(g.name)} ({tr.number(g.members)})", f"grp:{g.id}")
            for g in mine))
        return None

    async def show(self, t: StoreTurn, rest: str) -> None:
        """One group: its members (names, and who shares their own progress), the link to
        join, and its weekly figures as the rule in group_figures allows."""
        tr = translator_for(t.user.locale)
        group = await self._own_group(t, rest)
        if group is None:
            return
        members = await groups.members_of(t.session, t.user_id, group.id)
        weeks = await group_figures.group_week_figures(t.session, t.user_id, group.id, t.now)
        lines = [f"{tr.words(group.name)} · {tr.gettext(KIND_LABELS[GroupKind(group.kind)])}",
                 tr.gettext("Members: {count}").format(count=tr.isolate(tr.number(len(members))))]
        for m in members:
            name = tr.person(m.first_name, m.user_id)
            lines.append(f"• {name}" if m.visibility is Visibility.FIGURES else
                         "• " + tr.gettext("{name} (also shares their own progress)").format(
                             name=name))
        lines += ["", tr.gettext("Join link expires: {date}").format(
            date=expiry_text(t, tr, group.code_expires_at))
                  if group.code_expires_at > t.now else
                  tr.gettext("The join link has expired. Make a new one to invite people."),
                  "", tr.gettext("By week (a figure shows only when at least 3 members "
                                 "whose own progress you do not see contributed to it; — "
                                 "means withheld):")]
        lines += [_week_line(w, tr) for w in weeks]
        buttons = [Button(tr.gettext("Schedule a group session"),
                          f"{SESSION_BUTTON}:new:{GROUP_TARGET}{group.id}"),
                   Button(tr.gettext("Assign an exercise to the group"), f"gas:{group.id}"),
                   Button(tr.gettext("Give the group a programme"),
                          f"{PROGRAMME_BUTTON}:{group.id}"),
                   Button(tr.gettext("New join link (the old one stops working)"),
                          f"gcode:{group.id}"),
                   Button(tr.gettext("Rename the group"), f"gren:{group.id}"),
                   Button(tr.gettext("Remove a member"), f"grm:{group.id}"),
                   Button(tr.gettext("Link the group's Telegram chat"), f"gchat:{group.id}"),
                   Button(_chat_language(group.chat_locale, tr), f"{LANGUAGE_BUTTON}:{group.id}")]
        if group.chat_id is not None:
            buttons.append(Button(tr.gettext("Post this week's question in the group's chat"),
                                  f"gq:{group.id}"))
            buttons.append(Button(
                tr.gettext("Stop the automatic weekly question") if group.weekly_question
                else tr.gettext("Post a question every Monday by itself"),
                f"gwq:{group.id}:{'off' if group.weekly_question else 'on'}"))
        if GroupKind(group.kind) is GroupKind.TEAM:
            lines += ["", *await self._goal_lines(t, group, tr)]
            buttons.append(Button(tr.gettext("Set the team's shared goal"), f"ggoal:{group.id}"))
            if group.shared_goal and group.goal_reached_at is None:
                buttons.append(Button(tr.gettext("The team reached its goal"),
                                      f"gdone:{group.id}"))
        say(t, "\n".join(lines), tuple(buttons))

    @staticmethod
    async def _goal_lines(t: StoreTurn, group: Group, tr: Translator) -> list[str]:
        """The team's goal, and the contributions members chose to share (their words)."""
        if not group.shared_goal:
            return [tr.gettext("No shared goal yet.")]
        lines = [tr.gettext("Shared goal: {goal}").format(goal=tr.words(group.shared_goal))]
        for c in await groups.shared_contributions(t.session, t.user_id, group.id):
            dated = bool(c.commitment) and c.due_on is not None  # the date is the step's
            line = CONTRIBUTION_LINES.get((bool(c.contribution), bool(c.commitment), dated))
            if line is None:
                continue
            lines.append("• " + tr.gettext(line).format(
                name=tr.words(c.first_name or ""), contribution=tr.words(c.contribution),
                commitment=tr.words(c.commitment),
                date=tr.date(c.due_on, "long") if c.due_on else ""))
        return lines

    async def set_goal(self, t: StoreTurn, rest: str) -> Outcome | None:
        group = await self._own_group(t, rest)
        if group is None:
            return None
        outcome = await converse(t, self.dialogues, Start(contracts.GROUP_GOAL,
                                                          {"group.id": group.id}), t.now)
        enqueue_replies(t, outcome)
        return outcome

    async def contribute(self, t: StoreTurn, rest: str) -> Outcome | None:
        group_id = parse_id(rest)
        goal = None if group_id is None else await groups.member_goal(t.session, t.user_id,
                                                                       group_id)
        if goal is None:
            say(t, translator_for(t.user.locale).gettext("You are not in that group."))
            return None
        outcome = await converse(t, self.dialogues, Start(contracts.GROUP_CONTRIBUTION, {
            "group.id": group_id, "group.goal": goal}), t.now)
        enqueue_replies(t, outcome)
        return outcome

    async def post_question(self, t: StoreTurn, rest: str) -> None:
        """This week's question in the group's linked chat, in its language; members answer
        in private (the button opens it there) and share only on their yes."""
        group = await self._own_group(t, rest)
        if group is None:
            return
        own = translator_for(t.user.locale)
        if group.chat_id is None:
            say(t, own.gettext("Link the group's Telegram chat first."))
            return
        t.enqueue(group.chat_id, groups.question_payload(group, groups.week_question(t.now)))
        say(t, own.gettext("Done: the question is in the group's chat."))

    async def weekly_question(self, t: StoreTurn, rest: str) -> None:
        raw_id, _, switch = rest.partition(":")
        group = await self._own_group(t, raw_id if switch in ("on", "off") else "")
        if group is None:
            return
        tr = translator_for(t.user.locale)
        await groups.set_weekly_question(t.session, t.user_id, group.id, switch == "on", t.now)
        say(t, tr.gettext("Done: every Monday at 10:00 (your time) I post the week's question "
                          "in the group's chat.") if switch == "on" else
            tr.gettext("Done: no more automatic questions. You can still post one from "
                       "/groups."))

    async def new_code(self, t: StoreTurn, rest: str) -> None:
        """A new join link, shown once; the old one stops working at once."""
        group = await self._own_group(t, rest)
        if group is None:
            return
        tr = translator_for(t.user.locale)
        group, code = await groups.new_code(t.session, t.user_id, group.id, t.now)
        say(t, tr.gettext("Here is the group's new link; the old one no longer works. I show "
                          "it only this once.\nExpires: {date}\n{link}").format(
            date=expiry_text(t, tr, group.code_expires_at),
            link=self._link(JOIN_PREFIX + code)))

    async def rename(self, t: StoreTurn, rest: str) -> Outcome | None:
        group = await self._own_group(t, rest)
        if group is None:
            return None
        outcome = await converse(t, self.dialogues, Start(contracts.GROUP_RENAME,
                                                          {"group.id": group.id}), t.now)
        enqueue_replies(t, outcome)
        return outcome

    async def remove_step(self, t: StoreTurn, rest: str) -> None:
        """grm:<group> → whom; …:<member> → are you sure; …:<member>:y → removed. The
        member is told kindly; their exercises and sessions of the group stop, as if they
        had left."""
        tr = translator_for(t.user.locale)
        parts = rest.split(":")
        group = await self._own_group(t, parts[0])
        if group is None:
            return
        members = {m.user_id: m for m in await groups.members_of(t.session, t.user_id,
                                                                 group.id)}
        if len(parts) == 1:
            if not members:
                say(t, tr.gettext("The group has no members yet."))
                return
            say(t, tr.gettext("Whom do you want to remove from “{group}”?").format(
                group=tr.words(group.name)), tuple(
                Button(tr.person(m.first_name, m.user_id), f"grm:{group.id}:{uid}")
                for uid, m in members.items()))
            return
        member_id = parse_id(parts[1])
        if member_id is None or member_id not in members or len(parts) > 3 \
                or (len(parts) == 3 and parts[2] != "y"):
            say(t, tr.gettext("That person is not in the group any more."))
            return
        name = tr.person(members[member_id].first_name, member_id)
        if len(parts) == 2:
            say(t, tr.gettext("Removing {name} from “{group}”: the group's exercises and "
                              "sessions stop for them, and if they share their progress with "
                              "you through this group, that sharing ends too. I will let them "
                              "know. Shall I remove them?").format(
                name=name, group=tr.words(group.name)), (
                Button(tr.gettext("Yes, remove"), f"grm:{group.id}:{member_id}:y"),
                Button(tr.gettext("No, keep"), f"grp:{group.id}")), subject=member_id)
            return
        cancelled = await group_sessions.member_copies(t.session, member_id, group.id, t.now)
        ended = await groups.remove_member(t.session, t.user_id, group.id, member_id, t.now)
        if ended is None:
            say(t, tr.gettext("That person is not in the group any more."))
            return
        member = await t.session.get(User, member_id)
        if member is not None:
            mtr = translator_for(member.locale)
            told = mtr.gettext(
                "Your coach has removed you from the group “{group}”. Its exercises and "
                "sessions stop for you, and so does the sharing of your progress with your "
                "coach that began when you joined it. Thank you for taking part, and all the "
                "best.") if ended.coaches else mtr.gettext(
                "Your coach has removed you from the group “{group}”. Its exercises and "
                "sessions stop for you; what you wrote to me stays private, as before. Thank "
                "you for taking part, and all the best.")
            t.enqueue(member_id, {"text": told.format(group=mtr.words(group.name))})
            await group_sessions.tell_members(t, group, cancelled, t.now,
                                              SessionChange.CANCELLED)
        say(t, tr.gettext("Done: {name} is no longer in “{group}” and has been told.").format(
            name=name, group=tr.words(group.name)), subject=member_id)
        await announce_link_end(t, ended, t.now, SessionChange.CANCELLED)  # the coach's doing

    async def answer_in_private(self, update: Update, rest: str) -> None:
        """The week's question's button in the group chat (``gqa:<group>:<question>``):
        answered in private. Data that names no question does nothing."""
        raw_group, _, raw_index = rest.partition(":")
        group_id, index = parse_id(raw_group), parse_id(raw_index)
        if group_id is None or index is None or not 0 <= index < len(groups.GROUP_QUESTIONS):
            return
        await self.respond(update, lambda t: self._answer_question(t, group_id, index))

    async def _answer_question(self, t: StoreTurn, group_id: int, index: int) -> Outcome | None:
        tr = translator_for(t.user.locale)
        if not await groups.is_member(t.session, t.user_id, group_id):
            say(t, tr.gettext("You are not in that group."))
            return None
        say(t, tr.gettext("This week's question for your group: {question}").format(
            question=tr.gettext(groups.GROUP_QUESTIONS[index])))
        outcome = await converse(t, self.dialogues, Start(contracts.GROUP_ANSWER,
                                                          {"group.id": group_id}), t.now)
        enqueue_replies(t, outcome)
        return outcome

    async def celebrate(self, t: StoreTurn, rest: str) -> None:
        """The team reached its goal: a celebration in the group's own chat (its language),
        or, without one, to each member in private (theirs)."""
        group = await self._own_group(t, rest)
        if group is None or not group.shared_goal:
            return
        group = await groups.reach_goal(t.session, t.user_id, group.id, t.now)
        goal = group.shared_goal or ""

        def celebration(locale: str, text: str) -> dict[str, object]:
            tr = translator_for(locale)
            return Reply(tr.gettext(text).format(
                group=tr.words(group.name), goal=tr.words(goal))).to_payload()

        if group.chat_id is not None:
            t.enqueue(group.chat_id, celebration(group.chat_locale, N_(
                "Your coach has marked the shared goal of “{group}” as reached: “{goal}”. "
                "What made it possible, for each of you?")))
        else:
            for member in await groups.members_of(t.session, t.user_id, group.id):
                locale = await t.session.scalar(select(User.locale)
                                                .where(User.id == member.user_id))
                t.enqueue(member.user_id, celebration(locale or "en", N_(
                    "Your coach has marked the shared goal of your team “{group}” as reached: "
                    "“{goal}”. What made it possible, for you?")))
        say(t, translator_for(t.user.locale).gettext("Done: I have let the team know."))

    async def chat_language(self, t: StoreTurn, rest: str) -> None:
        """glang:<group> → the six languages; …:<locale> → what the bot posts in the group's
        chat is in it from now on."""
        checked = await self._group_button(t, rest, max_parts=2)
        if checked is None:
            return
        tr, parts, group = checked
        if len(parts) == 1:
            say(t, tr.gettext("Which language should I use in the group's chat?"), tuple(
                Button(LANGUAGE_NAMES[code], f"{LANGUAGE_BUTTON}:{group.id}:{code}")
                for code in SUPPORTED_LOCALES))
            return
        try:
            group = await groups.set_chat_locale(t.session, t.user_id, group.id, parts[1])
        except coach_errors.UnknownLanguage:
            say(t, tr.gettext(STALE_BUTTON))
            return
        say(t, _chat_language(group.chat_locale, tr))

    async def chat_link(self, t: StoreTurn, rest: str) -> None:
        group = await self._own_group(t, rest)
        if group is None:
            return
        tr = translator_for(t.user.locale)
        say(t, tr.gettext("Add me to the group's Telegram chat with this link. There I post "
                          "only what is for everyone, never what anyone writes to me in "
                          "private unless they choose to share it:\n{link}").format(
            link=self._link(CHAT_PREFIX + str(group.id), group_chat=True)))

    async def assign_step(self, t: StoreTurn, rest: str) -> None:
        """gas:<group> → the exercise; …:<exercise> → how often; …:<schedule> → at what
        local hour; …:<hour> → assigned to every member. Each step checks the group again."""
        checked = await self._group_button(t, rest, max_parts=4)
        if checked is None:
            return
        tr, parts, group = checked
        invalid = tr.gettext(STALE_BUTTON)
        choices = await self.exercise_choices(t, tr)
        prefix = f"gas:{group.id}"
        if len(parts) == 1:
            say(t, tr.gettext("Which exercise for the whole group?"), tuple(
                Button(title, f"{prefix}:{key}") for key, title in choices.items()))
            return
        exercise = parts[1]
        if exercise not in choices:
            say(t, invalid)
            return
        prefix += f":{exercise}"
        if len(parts) == 2:
            say(t, tr.gettext("How often?"), tuple(
                Button(schedule_label(key, tr), f"{prefix}:{key}") for key in SCHEDULES))
            return
        if parts[2] not in SCHEDULES:
            say(t, invalid)
            return
        if len(parts) == 3:
            say(t, tr.gettext("At what time? It is each member's own local time."), tuple(
                Button(tr.time(datetime(2000, 1, 1, int(h))), f"{prefix}:{parts[2]}:{h}")
                for h in HOURS))
            return
        if parts[3] not in HOURS:
            say(t, invalid)
            return
        schedule, days = SCHEDULES[parts[2]]
        today = t.now.date()
        custom = int(exercise[len(CUSTOM):]) if exercise.startswith(CUSTOM) else None
        await groups.assign_to_group(
            t.session, t.user_id, group.id, exercise, {**schedule, "hour": int(parts[3])},
            today, today + timedelta(days=days - 1), t.now, self.known_exercises(),
            custom_exercise_id=custom)
        say(t, tr.gettext("Assigned “{exercise}” to the group “{group}”. Each member gets it "
                          "at their own local time, and whoever joins later gets it too.")
            .format(exercise=tr.words(choices[exercise]), group=tr.words(group.name)))

    async def programme_step(self, t: StoreTurn, rest: str) -> None:
        """gprg:<group> → which programme; …:<programme> → at what local hour; …:<hour> →
        each member gets their own run from their own tomorrow. Each step checks the group
        again (only its coach gets anywhere)."""
        checked = await self._group_button(t, rest, max_parts=3)
        if checked is None:
            return
        tr, parts, group = checked
        invalid = tr.gettext(STALE_BUTTON)
        library = self.dialogues.programmes
        prefix = f"{PROGRAMME_BUTTON}:{group.id}"
        if len(parts) == 1:
            say(t, tr.gettext("Which programme for the whole group?"), tuple(
                Button(tr.gettext(p.title), f"{prefix}:{p.id}")
                for p in sorted(library.values(), key=lambda p: tr.gettext(p.title))))
            return
        chosen = library.get(parts[1])
        if chosen is None or (len(parts) == 3 and parts[2] not in HOURS):
            say(t, invalid)
            return
        if len(parts) == 2:
            say(t, tr.gettext("At what time? It is each member's own local time."), tuple(
                Button(tr.time(datetime(2000, 1, 1, int(h))), f"{prefix}:{chosen.id}:{h}")
                for h in HOURS))
            return
        _, count = await groups.assign_programme_to_group(
            t.session, t.user_id, group.id, chosen, int(parts[2]), 0, t.now,
            self.known_exercises())
        say(t, tr.gettext("Gave “{programme}” to the group “{group}”. Each member starts "
                          "tomorrow in their own time zone, and whoever joins while it runs "
                          "starts the day after joining.").format(
            programme=tr.gettext(chosen.title), group=tr.words(group.name))
            + "\n" + tr.gettext("Members who got it: {count}").format(
                count=tr.isolate(tr.number(count))))

    # -- the member ------------------------------------------------------------------------

    async def offer_join(self, t: StoreTurn, code: str) -> None:
        tr = translator_for(t.user.locale)
        try:
            group = await groups.group_for_code(t.session, code, t.user_id, t.now)
        except coach_errors.JoinError as exc:
            say(t, _join_problem(exc.problem, tr))
            return None
        coach = await t.session.get(User, group.coach_id)
        coach_name = tr.words((coach.first_name if coach else None) or "")
        # Two messages: on a phone, one this long hides the question under it.
        say(t, tr.gettext(
            "{coach} invites you to join the group “{group}”. What you write to me stays "
            "private: your coach sees only the group's figures (such as how many answered and "
            "the average mood), and only when at least three "
            "members have contributed, never your own answers unless you choose to share them. "
            "You can leave at any time with "
            "/leave.").format(coach=coach_name, group=tr.words(group.name)),
            subject=group.coach_id)
        say(t, tr.gettext(
            "You can also let {coach} follow your own progress (your goals, your check-ins with "
            "their mood ratings and your exercise answers, and also when you skip an exercise "
            "or do not answer for a few days), as "
            "in one-to-one coaching. If you share your progress and I notice signs that you may "
            "be in crisis, I tell {coach}, without any of your words, so that they can reach "
            "out to you. Would you like to join?").format(coach=coach_name), (
            Button(tr.gettext("Join: group figures only"), f"gjoin:f:{code}"),
            Button(tr.gettext("Join and share my progress"), f"gjoin:p:{code}"),
            Button(tr.gettext("No, thanks"), "gjoin:no")), subject=group.coach_id)
        return None

    async def answer_join(self, t: StoreTurn, rest: str) -> None:
        tr = translator_for(t.user.locale)
        answer, _, code = rest.partition(":")
        visibility = {"f": Visibility.FIGURES, "p": Visibility.PROGRESS}.get(answer)
        if visibility is None:
            say(t, tr.gettext("All right, you have not joined."))
            return None
        try:
            group = await groups.join(t.session, code, t.user_id, visibility, t.now)
        except coach_errors.JoinError as exc:
            say(t, _join_problem(exc.problem, tr))
            return None
        say(t, tr.gettext("Welcome to “{group}”! The exercises your coach gives the group "
                          "come to you here, in private, at your own local time. To leave, "
                          "send /leave.").format(group=tr.words(group.name)))
        copies = await group_sessions.copies_for_joiner(t.session, group.id, t.user_id, t.now)
        await group_sessions.tell_members(t, group, copies, t.now)
        if visibility is Visibility.PROGRESS:  # as when linking by invite
            await ask_brief_once(t, group.coach_id)
        return None

    async def leave(self, t: StoreTurn, argument: str) -> None:
        tr = translator_for(t.user.locale)
        mine = await groups.memberships(t.session, t.user_id)
        if not mine:
            say(t, tr.gettext("You are not in any group."))
            return None
        say(t, tr.gettext("Which group do you want to leave?"), tuple(
            Button(tr.words(m.group_name), f"gleave:{m.group_id}") for m in mine))
        return None

    async def leave_button(self, t: StoreTurn, rest: str) -> None:
        tr = translator_for(t.user.locale)
        group_id = parse_id(rest)
        names = {m.group_id: m.group_name for m in await groups.memberships(t.session,
                                                                             t.user_id)}
        cancelled = [] if group_id is None else await group_sessions.member_copies(
            t.session, t.user_id, group_id, t.now)
        ended = None if group_id is None or group_id not in names else await groups.leave(
            t.session, t.user_id, group_id, t.now)
        if group_id is None or ended is None:
            say(t, tr.gettext("You are not in that group."))
            return
        say(t, (tr.gettext("Done: you have left “{group}”. Its exercises and sessions stop for "
                           "you, and so does the sharing of your progress with your coach that "
                           "began when you joined it.") if ended.coaches else tr.gettext(
            "Done: you have left “{group}”. Its exercises and sessions stop for you."))
            .format(group=tr.words(names[group_id])))
        group = await t.session.get(Group, group_id)
        if group is not None:
            await group_sessions.tell_members(t, group, cancelled, t.now,
                                              SessionChange.CANCELLED)
        await announce_link_end(t, ended, t.now)

    # -- the group's own chat ----------------------------------------------------------------

    async def on_group_chat(self, update: Update) -> bool:
        """Membership changes, upgrades and commands in group chats (its buttons and /start
        links come from the registries first). True when handled; False leaves the update to
        the caller (a refusal, or a crisis check)."""
        chat = update.effective_chat
        if chat is None:
            return True
        if update.my_chat_member is not None:
            await self._membership_changed(update.my_chat_member)
            return True
        if update.callback_query is not None:
            return True  # the buttons in group chats: buttons.GROUP_BUTTONS, by the handlers
        message = update.message
        if message is not None and message.migrate_to_chat_id is not None:
            async with self.store.sessionmaker() as s, s.begin():
                await groups.move_chat(s, chat.id, message.migrate_to_chat_id)
            return True
        text = message.text if message is not None else None
        if message is None or text is None or not text.startswith("/"):
            return False
        async with self.store.sessionmaker() as s:
            group = await groups.group_of_chat(s, chat.id)
            locale = group.chat_locale if group is not None else None
        if group is None:
            return False  # not linked by a coach: refused like any group
        await self._say_in_chat(chat.id, translator_for(locale).gettext(
            "Let us talk in private: nobody in this group sees what you write to me there. "
            "/privacy says what I keep and who sees it. Here is our private chat: {link}").format(
                link=f"https://t.me/{self.bot_username()}"))
        return True

    async def link_chat(self, update: Update, raw_id: str) -> None:
        chat, user = update.effective_chat, update.effective_user
        assert chat is not None
        group_id = parse_id(raw_id)
        try:
            async with self.store.sessionmaker() as s, s.begin():
                if user is None or group_id is None:
                    raise coach_errors.NotYourGroup()
                group = await groups.link_chat(s, group_id, user.id, chat.id,
                                               datetime.now(UTC))
                name, locale = group.name, group.chat_locale
        except coach_errors.NotYourGroup:
            await self._say_in_chat(chat.id, translator_for(normalize_locale(
                user.language_code if user else None)).gettext(
                "Only the group's coach can link this chat to a coaching group."))
            return
        tr = translator_for(locale)
        await self._say_in_chat(chat.id, tr.gettext(
            "Hello, “{group}”! Here I post only what is for everyone, and a private answer only "
            "when the person who wrote it chooses to share it. Everything personal happens in "
            "private chats with me.").format(group=tr.words(name)))

    async def _membership_changed(self, change: ChatMemberUpdated) -> None:
        """Removed from a group: its link ends (added: nothing yet, a coach links it)."""
        if change.new_chat_member.status in (ChatMemberStatus.LEFT, ChatMemberStatus.BANNED):
            async with self.store.sessionmaker() as s, s.begin():
                if await groups.unlink_chat(s, change.chat.id):
                    log.info("removed from a linked group chat; link ended")

    async def _say_in_chat(self, chat_id: int, text: str) -> None:
        try:
            await self.say_now(chat_id, text)
        except TelegramError as exc:
            log.warning("could not answer in a group: %s", type(exc).__name__)


def _join_problem(problem: coach_errors.JoinProblem, tr: Translator) -> str:
    if problem is coach_errors.JoinProblem.ALREADY_MEMBER:
        return tr.gettext("You are already in this group.")
    if problem is coach_errors.JoinProblem.OWN:
        return tr.gettext("This is the link to your own group: send it to its members.")
    if problem is coach_errors.JoinProblem.EXPIRED:
        return tr.gettext("This group link has expired. Please ask your coach for a new one: "
                          "they can make one in a moment.")
    return tr.gettext("This group link is not valid any more. Please ask your coach for a "
                      "new one.")
