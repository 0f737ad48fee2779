"""The coach's side of issue 26 on Telegram: /message and the client's "Reply to my coach",
the /clients overview, /assignments with pause, resume, change and cancel, and /note.

Every command and button checks again, in the domain layer, that the client is this coach's
and the assignment theirs, so forged button data and arguments get nowhere. Writing (a
message, a reply, a note, a schedule) happens in dialogues, which keep the conversation state
in the database like any other."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from bot.coaching import links, managing, measures, messages, notes, noticing, programmes
from bot.coaching.assignments import exercise_ids
from bot.coaching.checkins import user_zone
from bot.coaching.coach_errors import NotYourClient
from bot.coaching.contracts import NEW_MEASURE
from bot.coaching.conversation import Start, converse, enqueue_replies
from bot.coaching.safety import paused_by_crisis
from bot.coaching.sessions import Engagement, engagement
from bot.dialogue.model import DialogueSet
from bot.engine import Outcome
from bot.engine.state import Button
from bot.i18n import N_, Translator, translator_for
from bot.store import Turn as StoreTurn
from bot.store import User, UserView
from bot.telegram.coach import NO_CLIENTS, find_client, parse_id, pick_client, say

#: Button data prefixes (with ":<id>"): each names what the button does.
MESSAGE = messages.ANSWER_BUTTON  # message:<client>: write to that client
REPLY = messages.REPLY_BUTTON  # coachreply:<coach>: the client answers their coach
NOTE = "note"  # note:<client>
MEASURE = "measure"  # measure:<client>: define a measure for that client
PROGRAMME = "prg"  # prg:<client>[:<programme>[:<hour>]]: give that client a programme
PROGRAMME_ACT = "prgdo"  # prgdo:<action>:<run>: pause, resume or cancel a whole programme
PROGRAMME_HOURS = ("7", "8", "12", "18", "20")
ASSIGNMENTS = "asg"  # asg:<client>: that client's assignments
ACT = "asgdo"  # asgdo:<action>:<assignment>: pause, resume, cancel
CHANGE = "asgchange"  # asgchange:<assignment>
QUIET = "quiet"  # quiet:<client>:<days>: alert the coach after that many quiet days
QUIET_CHOICES = (2, 3, 4, 7, 14)

TurnFn = Callable[[StoreTurn], Awaitable[Outcome | None]]
PressStep = Callable[[StoreTurn, str], Awaitable[Outcome | None]]  # (turn, data after prefix)


def _not_yours(t: StoreTurn) -> None:
    say(t, translator_for(t.user.locale).gettext(
        "I cannot find that client among yours. Send /clients to see them."))


@dataclass
class CoachSideHandlers:
    dialogues: DialogueSet

    # -- commands: (turn, the text after the command) --------------------------------------

    async def message(self, t: StoreTurn, argument: str) -> Outcome | None:
        """/message [name]: write to a client (picked from buttons when not named)."""
        return await self._for_client(t, argument, MESSAGE, self._start_message, N_PICK_MESSAGE)

    async def note(self, t: StoreTurn, argument: str) -> Outcome | None:
        """/note [name]: a private note about a client."""
        return await self._for_client(t, argument, NOTE, self._start_note, N_PICK_NOTE)

    async def measure(self, t: StoreTurn, argument: str) -> Outcome | None:
        """/measure [name]: a scale or number to ask a client for on a schedule."""
        return await self._for_client(t, argument, MEASURE, self._start_measure,
                                      N_PICK_MEASURE)

    async def programme(self, t: StoreTurn, argument: str) -> Outcome | None:
        """/programme [name]: give a client a programme of exercises over weeks."""
        return await self._for_client(t, argument, PROGRAMME, self._pick_programme,
                                      N_PICK_PROGRAMME)

    async def assignments(self, t: StoreTurn, argument: str) -> Outcome | None:
        """/assignments [name]: a client's assignments, each with its buttons."""
        return await self._for_client(t, argument, ASSIGNMENTS, self._list_assignments,
                                      N_PICK_ASSIGNMENTS)

    async def clients(self, t: StoreTurn, argument: str) -> Outcome | None:
        """/clients: per client the last activity, assignments and what needs attention;
        then buttons to see one's progress."""
        tr = translator_for(t.user.locale)
        found = await noticing.overview(t.session, t.user_id, t.now)
        if not found:
            say(t, tr.gettext(NO_CLIENTS))
            return None
        lines = [tr.gettext("Your clients:")]
        for seen, linked_at in found:
            sessions = await engagement(t.session, t.user_id, seen.client_id)
            lines.append(overview_line(seen, linked_at, t.now, tr, sessions))
        buttons = tuple(Button(tr.person(seen.first_name, seen.client_id),
                               f"client:{seen.client_id}") for seen, _ in found)
        say(t, "\n".join(lines) + "\n\n" + tr.gettext("Pick one to see their progress:"),
            buttons)
        return None

    # -- buttons -------------------------------------------------------------------------------

    # -- buttons (routed by bot/telegram/buttons.py): (turn, the data after the prefix) ----

    async def message_button(self, t: StoreTurn, rest: str) -> Outcome | None:
        return await self._with_client_id(t, rest, self._start_message)

    async def note_button(self, t: StoreTurn, rest: str) -> Outcome | None:
        return await self._with_client_id(t, rest, self._start_note)

    async def assignments_button(self, t: StoreTurn, rest: str) -> Outcome | None:
        return await self._with_client_id(t, rest, self._list_assignments)

    async def act_button(self, t: StoreTurn, rest: str) -> None:
        action, _, number = rest.partition(":")
        await self._act(t, action, number)

    async def change_button(self, t: StoreTurn, rest: str) -> Outcome | None:
        return await self._change(t, rest)

    async def quiet_button(self, t: StoreTurn, rest: str) -> None:
        client, _, days = rest.partition(":")
        await self._set_quiet_days(t, client, days)

    async def start_reply(self, t: StoreTurn, rest: str) -> Outcome | None:
        return await self._start_reply(t, rest)

    async def measure_button(self, t: StoreTurn, rest: str) -> Outcome | None:
        return await self._with_client_id(t, rest, self._start_measure)

    async def programme_button(self, t: StoreTurn, rest: str) -> None:
        await self._programme_step(t, rest)

    async def programme_act_button(self, t: StoreTurn, rest: str) -> None:
        action, _, number = rest.partition(":")
        await self._act_on_programme(t, action, number)

    # -- the steps -----------------------------------------------------------------------------

    async def _for_client(self, t: StoreTurn, argument: str, prefix: str,
                          then: Callable[[StoreTurn, User], Awaitable[Outcome | None]],
                          question: str) -> Outcome | None:
        tr = translator_for(t.user.locale)
        if argument.strip():
            client = await self._find_client(t, argument)
            if client is None:
                _not_yours(t)
                return None
            return await then(t, client)
        await pick_client(t, tr.gettext(question), prefix)
        return None

    async def _find_client(self, t: StoreTurn, argument: str) -> User | None:
        """The coach's client named or numbered by ``argument``, else None."""
        client_id = await find_client(t, argument)
        return None if client_id is None else await t.session.get(User, client_id)

    async def _with_client_id(self, t: StoreTurn, raw: str,
                              then: Callable[[StoreTurn, User], Awaitable[Outcome | None]]
                              ) -> Outcome | None:
        client_id = parse_id(raw)
        if client_id is None or not await links.is_linked(t.session, t.user_id, client_id):
            _not_yours(t)
            return None
        client = await t.session.get(User, client_id)
        if client is None:
            _not_yours(t)
            return None
        return await then(t, client)

    async def _run(self, t: StoreTurn, start: Start) -> Outcome:
        outcome = await converse(t, self.dialogues, start, t.now)
        enqueue_replies(t, outcome)
        return outcome

    async def _start_message(self, t: StoreTurn, client: User) -> Outcome:
        tr = translator_for(t.user.locale)
        return await self._run(t, Start(messages.MESSAGE_CLIENT, {
            messages.TO_CLIENT: client.id,
            messages.TO_CLIENT_NAME: tr.person(client.first_name, client.id),
            messages.TO_CLIENT_PAUSED: paused_by_crisis(client, t.now)}))

    async def _start_note(self, t: StoreTurn, client: User) -> Outcome:
        tr = translator_for(t.user.locale)
        return await self._run(t, Start(notes.COACH_NOTE, {
            notes.NOTE_CLIENT: client.id,
            notes.NOTE_CLIENT_NAME: tr.person(client.first_name, client.id)}))

    async def _start_measure(self, t: StoreTurn, client: User) -> Outcome:
        tr = translator_for(t.user.locale)
        return await self._run(t, Start(NEW_MEASURE, {
            measures.NEW_CLIENT: client.id,
            measures.NEW_CLIENT_NAME: tr.person(client.first_name, client.id)}))

    async def _pick_programme(self, t: StoreTurn, client: User) -> None:
        await self._programme_step(t, str(client.id))

    async def _programme_step(self, t: StoreTurn, rest: str) -> None:
        """prg:<client> → which programme; …:<programme> → at what time; …:<hour> → given,
        from the client's tomorrow. Every step checks the link again."""
        tr = translator_for(t.user.locale)
        parts = rest.split(":")
        client_id = parse_id(parts[0])
        client = None
        if client_id is not None and t.user.is_coach and len(parts) <= 3:
            try:
                client = await programmes.client_of(t.session, t.user_id, client_id)
            except NotYourClient:
                client = None
        if client is None:
            _not_yours(t)
            return
        library = self.dialogues.programmes
        if len(parts) == 1:
            say(t, tr.gettext("Which programme?"), tuple(
                Button(tr.gettext(p.title), f"{PROGRAMME}:{client.id}:{p.id}")
                for p in sorted(library.values(), key=lambda p: tr.gettext(p.title))))
            return
        chosen = library.get(parts[1])
        if chosen is None or (len(parts) == 3 and parts[2] not in PROGRAMME_HOURS):
            say(t, tr.gettext("That button is no longer valid. Send /programme to start "
                              "again."))
            return
        if len(parts) == 2:
            say(t, tr.gettext("At what time? It is the client's own local time."), tuple(
                Button(tr.time(time(int(h))), f"{PROGRAMME}:{client.id}:{chosen.id}:{h}")
                for h in PROGRAMME_HOURS))
            return
        starts_on = t.now.astimezone(user_zone(client)).date() + timedelta(days=1)
        await programmes.assign_programme(
            t.session, t.user_id, client.id, chosen, starts_on, int(parts[2]), 0, t.now,
            exercise_ids(self.dialogues))
        last = starts_on + timedelta(days=chosen.steps[-1].day)
        say(t, tr.gettext("You have given the programme “{programme}” to {client}.").format(
            programme=tr.gettext(chosen.title), client=tr.person(client.first_name, client.id))
            + "\n" + tr.gettext("First day: {start}").format(start=tr.date(starts_on, "short"))
            + "\n" + tr.gettext("Last step: {date}").format(date=tr.date(last, "short")),
            subject=client.id)

    async def _act_on_programme(self, t: StoreTurn, raw_action: str, raw_id: str) -> None:
        tr = translator_for(t.user.locale)
        run_id = parse_id(raw_id)
        try:
            action = managing.AssignmentAction(raw_action)
            if run_id is None:
                raise NotYourClient("not an id")
            run = await programmes.act_on_programme(t.session, t.user_id, run_id, action)
        except (ValueError, NotYourClient):
            say(t, tr.gettext("That programme is not one of yours any more. Send "
                              "/assignments to see them."))
            return
        say(t, acted_text(action, tr), subject=run.client_id)

    async def _start_reply(self, t: StoreTurn, raw: str) -> Outcome | None:
        """The client pressed "Reply to my coach": only to a coach they share with now."""
        tr = translator_for(t.user.locale)
        coach_id = parse_id(raw)
        coach = await t.session.get(User, coach_id) if coach_id is not None else None
        if coach is None or not await links.is_linked(t.session, coach.id, t.user_id):
            say(t, tr.gettext("You no longer share your progress with that coach, so I "
                              "could not pass your reply on."))
            return None
        return await self._run(t, Start(messages.REPLY_TO_COACH, {
            messages.TO_COACH: coach.id,
            messages.TO_COACH_NAME: tr.person(coach.first_name, coach.id)}))

    async def _list_assignments(self, t: StoreTurn, client: User) -> None:
        tr = translator_for(t.user.locale)
        found = await managing.assignments_of(t.session, t.user_id, client.id)
        name = tr.person(client.first_name, client.id)
        days = await noticing.silent_days(t.session, t.user_id, client.id)
        say(t, tr.ngettext("I tell you when {client} has not answered for {count} day. To "
                           "change it, pick the number of days:", "I tell you when {client} "
                           "has not answered for {count} days. To change it, pick the number "
                           "of days:", days).format(
                               client=name, count=tr.number(days)),
            tuple(Button(tr.number(n), f"{QUIET}:{client.id}:{n}") for n in QUIET_CHOICES),
            subject=client.id)
        if not found:
            say(t, tr.gettext("{client} has no assignments from you. Send /assign to give "
                              "them an exercise.").format(client=name), subject=client.id)
            return
        for run in await programmes.runs_of(t.session, client.id, coach_id=t.user_id):
            say(t, programme_text(run, self.dialogues, tr, client_today(client, t.now)),
                programme_buttons(run, tr), subject=client.id)
        say(t, tr.gettext("Assignments of {client}:").format(client=name), subject=client.id)
        country = managing.client_country(client)
        for view in found:
            say(t, self._assignment_text(view, country, tr), assignment_buttons(view, tr),
                subject=client.id)

    def _assignment_text(self, view: managing.AssignmentView, country: str | None,
                         tr: Translator) -> str:
        dialogue = self.dialogues.get(view.exercise_slug or "")
        title = tr.words(view.custom_title) if view.custom_title is not None else \
            tr.gettext(dialogue.title) if dialogue is not None else view.exercise_slug or ""
        when = managing.describe_schedule(view.schedule, view.starts_on, view.ends_on, country,
                                          tr)
        return f"{title}\n{when}" + ("\n" + tr.gettext("Paused.") if view.paused else "")

    async def _act(self, t: StoreTurn, raw_action: str, raw_id: str) -> None:
        tr = translator_for(t.user.locale)
        assignment_id = parse_id(raw_id)
        try:
            action = managing.AssignmentAction(raw_action)
            if assignment_id is None:
                raise managing.NotYourClient("not an id")
            view = await managing.act_on_assignment(t.session, t.user_id, assignment_id,
                                                    action)
        except (ValueError, managing.NotYourClient):
            say(t, tr.gettext("That assignment is not one of yours any more. Send "
                              "/assignments to see them."))
            return
        say(t, acted_text(action, tr), assignment_buttons(view, tr) if view.active else (),
            subject=view.client_id)

    async def _set_quiet_days(self, t: StoreTurn, raw_client: str, raw_days: str) -> None:
        tr = translator_for(t.user.locale)
        client_id, days = parse_id(raw_client), parse_id(raw_days)
        try:
            if client_id is None or days is None or not t.user.is_coach:
                raise noticing.NotYourClient("forged")
            await noticing.set_silent_days(t.session, t.user_id, client_id, days)
        except (noticing.NotYourClient, ValueError):
            _not_yours(t)
            return
        say(t, tr.ngettext("Done: I tell you after {count} quiet day.",
                           "Done: I tell you after {count} quiet days.", days).format(
                               count=tr.number(days)), subject=client_id)

    async def _change(self, t: StoreTurn, raw_id: str) -> Outcome | None:
        tr = translator_for(t.user.locale)
        assignment_id = parse_id(raw_id)
        found = None
        if assignment_id is not None and t.user.is_coach:
            try:
                found = await managing.owned(t.session, t.user_id, assignment_id)
            except managing.NotYourClient:
                found = None
        if found is None:
            say(t, tr.gettext("That assignment is not one of yours any more. Send "
                              "/assignments to see them."))
            return None
        client = await t.session.get(User, found.client_id)
        name = tr.person(client.first_name if client else None, found.client_id)
        return await self._run(t, Start(managing.EXERCISE_SCHEDULE, {
            managing.SCHEDULE_ASSIGNMENT: found.id, "schedule.client_name": name}))


N_PICK_MESSAGE = N_("Who would you like to write to?")
N_PICK_NOTE = N_("Which client is the note about?")
N_PICK_ASSIGNMENTS = N_("Whose assignments would you like to see?")
N_PICK_MEASURE = N_("Who is the measure for?")
N_PICK_PROGRAMME = N_("Who is the programme for?")


def client_today(client: UserView, now: datetime) -> date:
    return now.astimezone(user_zone(client)).date()


def programme_text(run: programmes.RunView, dialogues: DialogueSet, tr: Translator,
                   today: date) -> str:
    """Where a client is in a programme, for them or their coach: labels before values."""
    programme = dialogues.programmes.get(run.programme)
    title = tr.gettext(programme.title) if programme is not None else run.programme
    lines = [tr.gettext("Programme: {title}").format(title=title),
             tr.gettext("Steps done: {done} of {total}").format(
                 done=tr.number(run.done), total=tr.number(len(run.steps)))]
    current = run.current(today)
    if current is not None:
        dialogue = dialogues.get(run.steps[current].exercise)
        lines.append(tr.gettext("Now: {exercise}").format(
            exercise=tr.gettext(dialogue.title) if dialogue is not None else ""))
    following = run.next_start(today)
    if following is not None:
        lines.append(tr.gettext("Next step starts: {date}").format(
            date=tr.date(following, "short")))
    if run.done == len(run.steps):
        lines.append(tr.gettext("Every step is done."))
    if run.status == "paused":
        lines.append(tr.gettext("Paused."))
    return "\n".join(lines)


def acted_text(action: managing.AssignmentAction, tr: Translator) -> str:
    """What the coach is told after pausing, resuming or cancelling an assignment or a
    programme."""
    return {
        managing.AssignmentAction.PAUSE: tr.gettext(
            "Paused: nothing more of it is sent until you resume it."),
        managing.AssignmentAction.RESUME: tr.gettext(
            "Resumed: it is planned again from now on."),
        managing.AssignmentAction.CANCEL: tr.gettext(
            "Cancelled: nothing more of it is sent."),
    }[action]


def programme_buttons(run: programmes.RunView, tr: Translator) -> tuple[Button, ...]:
    A = managing.AssignmentAction
    toggle = (Button(tr.gettext("Resume"), f"{PROGRAMME_ACT}:{A.RESUME.value}:{run.id}")
              if run.status == "paused"
              else Button(tr.gettext("Pause"), f"{PROGRAMME_ACT}:{A.PAUSE.value}:{run.id}"))
    return (toggle, Button(tr.gettext("Cancel"), f"{PROGRAMME_ACT}:{A.CANCEL.value}:{run.id}"))


def assignment_buttons(view: managing.AssignmentView, tr: Translator) -> tuple[Button, ...]:
    A = managing.AssignmentAction
    toggle = (Button(tr.gettext("Resume"), f"{ACT}:{A.RESUME.value}:{view.id}") if view.paused
              else Button(tr.gettext("Pause"), f"{ACT}:{A.PAUSE.value}:{view.id}"))
    return (toggle, Button(tr.gettext("Change"), f"{CHANGE}:{view.id}"),
            Button(tr.gettext("Cancel"), f"{ACT}:{A.CANCEL.value}:{view.id}"))


def overview_line(seen: noticing.ClientOverview, linked_at: datetime, now: datetime,
                  tr: Translator, sessions: Engagement | None = None) -> str:
    """One client in /clients: name, last activity, assignments, what needs attention."""
    parts = [tr.person(seen.first_name, seen.client_id)]
    if seen.last_activity is None:
        parts.append(tr.gettext("no answer yet"))
    else:
        parts.append(tr.gettext("last active: {date}").format(
            date=tr.date(seen.last_activity.date(), "short")))
    parts.append(tr.ngettext("{count} assigned exercise", "{count} assigned exercises",
                             seen.assignments).format(count=tr.number(seen.assignments)))
    if seen.paused_assignments:
        parts.append(tr.ngettext("{count} paused", "{count} paused",
                                 seen.paused_assignments).format(
            count=tr.number(seen.paused_assignments)))
    if seen.open_actions:
        parts.append(tr.ngettext("{count} open action", "{count} open actions",
                                 seen.open_actions).format(count=tr.number(seen.open_actions)))
    if sessions is not None and sessions.agreed:
        parts.append(tr.ngettext("{count} session left", "{count} sessions left",
                                 sessions.left).format(count=tr.number(sessions.left)))
    attention: list[str] = []
    if seen.overdue_actions:
        attention.append(tr.ngettext("{count} action past its date",
                                     "{count} actions past their date",
                                     seen.overdue_actions).format(
            count=tr.number(seen.overdue_actions)))
    quiet = seen.quiet_for(now, linked_at)
    if quiet >= seen.silent_days:
        attention.append(tr.ngettext("quiet for {count} day", "quiet for {count} days",
                                     quiet).format(count=tr.number(quiet)))
    if seen.skipped_twice:
        attention.append(tr.gettext("skipped the same exercise twice"))
    if seen.in_crisis_pause:
        attention.append(tr.gettext("paused after signs of a crisis"))
    line = "• " + " · ".join(parts)
    if attention:
        line += "\n  ⚠ " + "; ".join(attention)
    return line
