"""Running dialogues: pure functions from (dialogues, state, turn) to replies and a new state."""

from __future__ import annotations

import hashlib
import re
from contextlib import suppress
from dataclasses import replace
from datetime import date, datetime, time, timedelta
from functools import lru_cache

from bot.dialogue.expr import Value
from bot.dialogue.model import (
    END,
    LATER_TIME,
    LATER_TOMORROW,
    Ask,
    ComeBack,
    Dialogue,
    DialogueSet,
    Step,
)
from bot.dialogue.template import placeholders, render
from bot.engine.answers import Invalid, answer_buttons, parse_answer, weekdays_of
from bot.engine.conditions import evaluate
from bot.engine.crisis import (
    CrisisCategory,
    CrisisLevel,
    CrisisSignal,
    detect_crisis,
    emergency_number,
    has_country_lines,
    helplines_for,
    strip_invisible,
)
from bot.engine.state import (
    Button,
    Context,
    ConversationState,
    Frame,
    Later,
    Outcome,
    Reply,
    SavedAnswer,
    Turn,
)
from bot.i18n import Translator

# Steps that only talk are passed through on their own; this bounds such a run in one turn.
MAX_STEPS_PER_TURN = 50
# A ``later`` step comes back today only if its time is at least this far off; else tomorrow
# (an exercise for the day needs the day).
LATER_MIN_GAP = timedelta(hours=3)
# The help lines for the client's country, as a crisis reply shows them: a text may show
# them where it is (the care check-in the day after a crisis does).
HELP_LINES = "help.lines"
# How dates and times are saved (see answers.py), so they can be shown in the client's way.
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d\Z")


@lru_cache(maxsize=4096)
def step_token(dialogue_id: str, step_id: str) -> str:
    """A short tag in button data, so a button of an earlier question is recognised as stale."""
    return hashlib.sha1(f"{dialogue_id}:{step_id}".encode()).hexdigest()[:8]


class _Run:
    """The work of one turn. Mutable inside, but only an Outcome leaves it."""

    def __init__(self, dialogues: DialogueSet, state: ConversationState, ctx: Context) -> None:
        self.dialogues = dialogues
        self.stack = list(state.stack)
        self.variables: dict[str, Value] = dict(state.variables)
        self.ctx = ctx
        self.tr = ctx.translator
        self.replies: list[Reply] = []
        self.saved: list[SavedAnswer] = []
        self.finished: list[str] = []
        self.steps_taken = 0
        self._readable: dict[str, Value] | None = None
        self.safety: CrisisCategory | None = None  # ask the safety question about this
        self.later: Later | None = None

    def outcome(self) -> Outcome:
        """What the turn did; with a safety question due, it is the reply (the answer is
        kept, and the dialogue goes on from it once the client says "no")."""
        replies = tuple(self.replies)
        if self.safety is not None:
            replies = (safety_question(self.ctx, about_danger(self.safety), low=True),)
        return Outcome(
            state=ConversationState(tuple(self.stack), self.variables,
                                    safety_asked=self.safety is not None,
                                    go_on=self.safety is not None),
            replies=replies,
            saved=tuple(self.saved),
            finished=tuple(self.finished),
            later=self.later,
        )

    def say(self, text: str, buttons: tuple[Button, ...] = ()) -> None:
        self.replies.append(Reply(text, buttons))

    # -- texts -----------------------------------------------------------------------------

    def display(self, name: str, value: Value) -> str:
        """A value as the client reads it: in their language, a choice by its label."""
        if value is None:
            return ""
        if isinstance(value, bool):
            return self.tr.gettext("yes") if value else self.tr.gettext("no")
        if isinstance(value, int | float):
            return self.tr.number(value)
        label = self.dialogues.choice_labels.get(name, {}).get(value)
        if label is not None:
            return self.tr.gettext(label)
        days = weekdays_of(value) if name in self.dialogues.weekday_variables else None
        if days is not None:
            return self.tr.weekdays(days, self.ctx.country)
        if _ISO_DATE.match(value):
            with suppress(ValueError):
                return self.tr.date(date.fromisoformat(value), "long")
        if _TIME.match(value):
            return self.tr.time(time(int(value[:2]), int(value[3:])))
        return value

    def readable(self) -> dict[str, Value]:
        """What texts and conditions may read: the saved answers and the provided values."""
        if self._readable is None:
            self._readable = {**self.variables, **self.ctx.provided, "name": self.ctx.name,
                              "today": self.ctx.today.isoformat()}
        return self._readable

    def fill(self, translated: str) -> str:
        names = placeholders(translated)
        if not names:
            return render(translated, {})
        readable = self.readable()
        values = {}
        for name in names:
            if name == HELP_LINES:  # the bot's own block, isolated line by line
                values[name] = "\n".join(_helplines(self.ctx))
                continue
            value = readable.get(name)
            shown = self.display(name, value)
            # What a person wrote (or their name) is isolated in every language; what the
            # bot formats (numbers, dates, its own labels) where the line reads right to left.
            typed = name == "name" or (isinstance(value, str) and shown == value)
            values[name] = (self.tr.words if typed else self.tr.isolate)(
                self.ctx.name if name == "name" else shown)
        return render(translated, values)

    def step_text(self, step: Step) -> str:
        if step.say_plural is None:
            return self.fill(self.tr.gettext(step.say or ""))
        plural = step.say_plural
        count = self.readable().get(plural.count)
        number = int(count) if isinstance(count, int | float) else 0
        return self.fill(self.tr.ngettext(plural.one, plural.other, number))

    def buttons(self, dialogue_id: str, step: Step) -> tuple[Button, ...]:
        token = step_token(dialogue_id, step.id)
        return tuple(Button(label, f"{token}:{value}") for label, value in answer_buttons(
            step.ask, self.tr, lambda text: self.fill(self.tr.gettext(text))))

    # -- moving through steps --------------------------------------------------------------

    def show(self, dialogue_id: str, step: Step) -> None:
        if step.say is None and step.say_plural is None:
            return  # a step that only chooses where to go
        self.say(self.step_text(step), self.buttons(dialogue_id, step))

    def enter(self, step_id: str) -> None:
        frame = self.stack[-1]
        step = self.dialogues[frame.dialogue].steps[step_id]
        self.stack[-1] = frame.at(step_id)
        if step.later is not None:
            self.come_back(frame.dialogue, step.later)
        self.show(frame.dialogue, step)
        if step.ask.type == "none":
            self.follow(step)

    def follow(self, step: Step) -> None:
        self.steps_taken += 1
        if self.steps_taken > MAX_STEPS_PER_TURN:
            self.stack.clear()
            self.say(self.tr.gettext("Something in this conversation went round in circles, "
                                     "so I stopped it. Your answers are kept."))
            return
        readable = self.readable()
        branch = next(b for b in step.next if b.condition is None
                      or evaluate(b.condition, readable))
        remember = step.ask.type != "none"
        frame = self.stack[-1]
        if branch.call is not None:
            self.stack[-1] = frame.at(branch.goto, remember=remember)
            self.begin(self.dialogues[branch.call])
        elif branch.goto == END:
            self.finish()
        else:
            self.stack[-1] = frame.at(branch.goto, remember=remember)
            self.enter(branch.goto)

    def come_back(self, dialogue_id: str, later: ComeBack) -> None:
        """Record when the dialogue comes back, for the platform and for the steps after."""
        self.later = later_for(dialogue_id, later, self.ctx.today, self.ctx.clock)
        self.variables[LATER_TIME] = later.at.strftime("%H:%M")
        self.variables[LATER_TOMORROW] = self.later.on != self.ctx.today
        self._readable = None

    def begin(self, dialogue: Dialogue, at: str | None = None) -> None:
        """Enter a dialogue at its start (or at step ``at``, where it comes back later); the
        answers it asks anew are empty until given."""
        step = dialogue.start if at is None else at if at in dialogue.steps \
            else dialogue.restart_step  # an edit removed the step it was to come back at
        self.stack.append(Frame(dialogue.id, step, dialogue.content_hash))
        if dialogue.fresh:
            self.variables.update(dict.fromkeys(dialogue.fresh))
            self._readable = None
        self.enter(step)

    def finish(self) -> None:
        done = self.stack.pop()
        self.finished.append(done.dialogue)
        if not self.stack:
            if not self.replies:  # it ended on a question: never leave an answer unacknowledged
                self.say(self.tr.gettext("Thank you. That is all for now."))
            return
        caller = self.stack[-1]
        if caller.step == END:
            self.finish()
        elif self.current() is not None:
            self.enter(caller.step)

    def current(self) -> tuple[Dialogue, Step] | None:
        """The dialogue and step on top, after an edit of the scripts moved them if needed.

        Returns None when the user had to be moved: they have been told and asked anew.
        """
        frame = self.stack[-1]
        dialogue = self.dialogues.get(frame.dialogue)
        if dialogue is None:
            self.stack.clear()
            self.say(self.tr.gettext("The conversation we were having is no longer available. "
                                     "Your answers are kept. Send /help to see what we can do."))
            return None
        step = dialogue.steps.get(frame.step)
        if step is None:
            self.say(self.tr.gettext("Sorry, this conversation has changed since we last spoke, "
                                     "so we will pick it up from here."))
            self.stack[-1] = Frame(dialogue.id, dialogue.restart_step, dialogue.content_hash)
            self.enter(dialogue.restart_step)
            return None
        if frame.content_hash != dialogue.content_hash:
            self.stack[-1] = replace(frame, content_hash=dialogue.content_hash)
        return dialogue, step

    def save(self, dialogue: Dialogue, step: Step, value: Value) -> None:
        if step.ask.save is None:
            return
        self.variables[step.ask.save] = value
        self._readable = None
        self.saved.append(SavedAnswer(dialogue.id, step.id, step.ask.save, value))
        low = step.ask.safety_at_or_below
        if (low is not None and isinstance(value, int | float) and value <= low) \
                or value in step.ask.safety_on:
            self.safety = CrisisCategory.INDIRECT_IDEATION

    # -- commands ----------------------------------------------------------------------------

    def back(self, dialogue: Dialogue, step: Step) -> None:
        frame = self.stack[-1]
        trail = [s for s in frame.trail if s in dialogue.steps]
        if not trail:
            self.say(self.tr.gettext("This is the first question, so there is nothing to go "
                                     "back to."))
            self.show(dialogue.id, step)
            return
        self.stack[-1] = replace(frame, step=trail[-1], trail=tuple(trail[:-1]))
        self.show(dialogue.id, dialogue.steps[trail[-1]])

    def skip(self, dialogue: Dialogue, step: Step) -> None:
        if not step.ask.optional:
            self.say(self.tr.gettext("This question cannot be skipped: it matters for what "
                                     "comes next. To stop for now, send /cancel."))
            self.show(dialogue.id, step)
            return
        self.save(dialogue, step, None)
        self.follow(step)


def later_for(dialogue_id: str, later: ComeBack, today: date, clock: time) -> Later:
    """When to come back: today at ``later.at`` if that is at least LATER_MIN_GAP after the
    client's ``clock``, else tomorrow."""
    soonest = datetime.combine(today, clock) + LATER_MIN_GAP
    on = today if datetime.combine(today, later.at) >= soonest else today + timedelta(days=1)
    return Later(dialogue_id, later.goto, on, later.at)


def start(dialogues: DialogueSet, state: ConversationState, dialogue_id: str,
          ctx: Context, *, at: str | None = None) -> Outcome:
    """Begin a dialogue, leaving whatever was in progress (its answers stay saved); at step
    ``at`` when it comes back later on its own.

    A safety question left unanswered is not asked again here: the dialogue opens gently."""
    run = _Run(dialogues, replace(state, stack=(), safety_asked=False), ctx)
    if state.safety_asked:
        tr = ctx.translator
        # The emergency line itself, not only a command to ask for it.
        run.say("\n".join((tr.gettext(
            "Before we start: last time, I asked you directly whether you were in danger or "
            "afraid that you or someone else could get hurt, and I do not know how you are "
            "now.") if state.safety_danger else tr.gettext(
            "Before we start: last time, I asked you directly whether you were having "
            "thoughts of ending your life or of hurting yourself, and I do not know how you "
            "are now. If you are having such thoughts now, please do not keep them to "
            "yourself: tell someone you trust."),
            _emergency_line(tr, emergency_number(ctx.country)),
            tr.gettext("/sos shows who else you can talk to. To stop here for today, send "
                       "/cancel."))))
    run.begin(dialogues[dialogue_id], at)
    return run.outcome()


def resume(dialogues: DialogueSet, state: ConversationState, ctx: Context) -> Outcome:
    """Show the current question again (after a restart, or when the client asks for it);
    an unanswered safety question comes first. Once it is answered "no", a dialogue that
    waited for it goes on from the answer that raised it."""
    if state.safety_asked:
        return Outcome(state=state, replies=(safety_question(ctx, state.safety_danger,
                                                             again=True),))
    run = _Run(dialogues, state, ctx)
    if run.stack:
        current = run.current()
        if current is not None and state.go_on and current[1].ask.type != "none":
            run.follow(current[1])
        elif current is not None:
            run.show(current[0].id, current[1])
    return run.outcome()


def cancel(dialogues: DialogueSet, state: ConversationState, ctx: Context) -> Outcome:
    run = _Run(dialogues, state, ctx)
    tr = ctx.translator
    if not run.stack:
        run.say(tr.gettext("There is nothing to cancel right now."))
        return run.outcome()
    run.stack.clear()
    if ctx.consented:
        run.say(tr.gettext("All right, we will stop here. Your answers so far are kept."))
    else:
        run.say(tr.gettext("All right, we will stop here. Until you agree, I keep none of your "
                           "answers. If you would like to begin again, send /start."))
    return run.outcome()


def worldwide_emergency_line(tr: Translator) -> str:
    """The emergency line for a country not known: the numbers that hold in most places."""
    return tr.gettext("If you have hurt yourself or feel you might, or you or someone else is "
                      "in immediate danger, call your local emergency number now (112 in the "
                      "EU, 911 in North America, 999 in the UK).")


def _emergency_line(tr: Translator, number: str | None) -> str:
    """The client's country's emergency ``number`` when it is known, else the numbers that
    hold in most of the world."""
    if number is None:
        return worldwide_emergency_line(tr)
    return tr.gettext("If you have hurt yourself or feel you might, or you or someone else is "
                      "in immediate danger, call the emergency number now: {number}.").format(
                          number=tr.isolate(number))


def _helplines(ctx: Context) -> list[str]:
    """The emergency line and the help lines for the client's country, one per line (the
    country's emergency number is not repeated among its lines). A line open around the
    clock says so; no text promises that of the others, some of which keep office hours."""
    tr = ctx.translator
    number = emergency_number(ctx.country)
    lines = [_emergency_line(tr, number)]
    for line in helplines_for(ctx.country):
        contact = line.phone or line.url
        if contact and (number is None or line.phone != number):
            entry = f"• {tr.isolate(line.name_in(tr.locale))}: {tr.isolate(contact)}"
            if line.around_the_clock:
                entry = tr.gettext("{line} (at any hour)").format(line=entry)
            lines.append(entry)
    return lines


def crisis_reply(ctx: Context, *, coach_told: bool = False) -> Reply:
    """Care and real help instead of coaching; what the client wrote is not repeated. With
    ``coach_told``, it says that their coach was told (the platform knows, not the engine)."""
    tr = ctx.translator
    people = tr.gettext("I have let your coach know, without any of your words, so that they "
                        "can reach out to you. Please also tell someone you trust. Until "
                        "tomorrow, I will not send you anything about coaching.") if coach_told \
        else tr.gettext("Please also tell someone you trust, or your coach if you have one. "
                        "Until tomorrow, I will not send you anything about coaching.")
    helplines = _helplines(ctx)
    own_lines = has_country_lines(ctx.country)
    lines = [
        tr.gettext("Thank you for trusting me with this. What you are going through matters "
                   "more than any goal, so I am pausing our coaching here. I am a coaching "
                   "companion, not a crisis service, and you deserve to talk to a person."),
        "",
        *helplines[:1],
        tr.gettext("Please reach out to one of these lines as soon as you can, even if it "
                   "is hard to start:") if own_lines else
        # TRANSLATORS: the country is not known: what follows are websites that list lines.
        tr.gettext("These sites list the help lines in your country. Please contact one of "
                   "them as soon as you can, even if it is hard to start:"),
        *helplines[1:],
        tr.gettext("/sos shows these lines again at any time.") if own_lines else
        tr.gettext("/sos shows these sites again at any time."),
        "",
        people,
    ]
    return Reply("\n".join(lines))


def sos_reply(ctx: Context, state: ConversationState) -> Reply:
    """The help lines on request (/sos), whatever is going on; nothing else changes. It ends
    on the help: only when a question is open does one line say it can wait."""
    tr = ctx.translator
    lines = [tr.gettext("Here is where you can find people to talk to:"), "",
             *_helplines(ctx)]
    if state.active or state.safety_asked:
        lines += ["", tr.gettext("Whenever you want, we can pick up where we left off. There "
                                 "is no hurry.")]
    return Reply("\n".join(lines))


_SOS_PUNCTUATION = "!.?¡¿ "


def sos_words(text: str) -> str | None:
    """What was written after /sos (also /sos@bot), "" for /sos or the word SOS alone (in
    any case, with punctuation around it, invisible characters ignored); None when ``text``
    is not an SOS."""
    text = strip_invisible(text).strip()
    if text.strip(_SOS_PUNCTUATION).casefold() == "sos":
        return ""
    command, *words = text.split(maxsplit=1) or [""]
    if command.strip(_SOS_PUNCTUATION).casefold().split("@")[0] != "/sos":
        return None
    return words[0] if words else ""


def is_sos(text: str) -> bool:
    return sos_words(text) is not None


def concern_reply(ctx: Context) -> Reply:
    """Someone the client cares about may be at risk: help lines to pass on."""
    tr = ctx.translator
    return Reply("\n".join([
        tr.gettext("It sounds like you are worried about someone. Their safety is not yours "
                   "to carry alone. These services also "
                   "advise people who are worried about someone else, and you can pass them "
                   "on:"), "",
        *_helplines(ctx),
    ]))


_DANGER = frozenset({CrisisCategory.ABUSE, CrisisCategory.THREATENED,
                     CrisisCategory.HARM_OTHERS})


def about_danger(category: CrisisCategory | None) -> bool:
    """Whether the safety question for this sign asks about danger (abuse, threats, harm to
    others) rather than about thoughts of ending one's life."""
    return category in _DANGER


def safety_question(ctx: Context, danger: bool, *, again: bool = False,
                    low: bool = False) -> Reply:
    """One direct question, in the spirit of the Columbia scale's screening questions:
    asking plainly does not put the idea in anyone's head. Asked ``again``, it says so (the
    client has told nothing new) and keeps to what it first asked about. After a very ``low``
    answer (a mood of 1 or 2, "Worse"), it says it asks everyone who feels this low: the
    client tapped a button, and a question about suicide should not sound like a verdict on
    them."""
    tr = ctx.translator
    if again:
        text = tr.gettext("Before we go on, I would still like to know, because it matters: "
                          "are you in danger right now, or afraid that you or someone else "
                          "could get hurt?") if danger else tr.gettext(
            "Before we go on, I would still like to know, because it matters: are you having "
            "thoughts of ending your life or of hurting yourself?")
    elif low and not danger:
        text = tr.gettext("Thank you for telling me. When things feel this low, I ask everyone "
                          "directly, because it matters: are you having thoughts of ending "
                          "your life or of hurting yourself?")
    elif danger:
        text = tr.gettext("Thank you for telling me. I would like to ask you directly, because "
                          "it matters: are you in danger right now, or afraid that you or "
                          "someone else could get hurt?")
    else:
        text = tr.gettext("Thank you for telling me. I would like to ask you directly, because "
                          "it matters: are you having thoughts of ending your life or of "
                          "hurting yourself?")
    return Reply(text, (Button(tr.gettext("Yes"), SAFETY_YES), Button(tr.gettext("No"),
                                                                      SAFETY_NO)))


SAFETY_YES = "safety:yes"
SAFETY_NO = "safety:no"


def _safety_answer(turn: Turn, ctx: Context) -> bool | None:
    """The client's answer to the safety question, or None when the message is not one."""
    if turn.button in (SAFETY_YES, SAFETY_NO):
        return turn.button == SAFETY_YES
    if turn.text is None:
        return None
    value = parse_answer(Ask(type="yes_no"), turn.text, ctx.translator, ctx.today)
    return value if isinstance(value, bool) else None


#: What fired when the client answers "yes" to the safety question (the audit log's name).
SAFETY_YES_FIRED = "safety_yes"


def _confirmed(signal: CrisisSignal | None) -> CrisisSignal:
    """A "yes" to the safety question, as the audit log and the counters see it: urgent, of
    the category the message itself showed, else of the one the question asks about
    (thoughts of ending one's life); what fired names the answer, never its words."""
    if signal is None:
        return CrisisSignal(CrisisLevel.URGENT, CrisisCategory.EXPLICIT_IDEATION, 1.0,
                            (SAFETY_YES_FIRED,))
    return replace(signal, level=CrisisLevel.URGENT, fired=(*signal.fired, SAFETY_YES_FIRED))


def _urgent(state: ConversationState, ctx: Context, signal: CrisisSignal) -> Outcome:
    return Outcome(state=replace(state, stack=(), safety_asked=False, go_on=False,
                                 safety_danger=False),
                   replies=(crisis_reply(ctx),), crisis=True, signal=signal)


def handle(dialogues: DialogueSet, state: ConversationState, turn: Turn,
           ctx: Context) -> Outcome:
    """Answer one incoming message. Every text is checked for a crisis first: an urgent sign
    stops coaching with help lines; a possible one is answered as usual but followed by one
    direct safety question instead of the next step ("yes" is urgent, "no" goes on where the
    dialogue stands); worry for someone else gets help lines to pass on."""
    signal = detect_crisis(turn.text) if turn.text is not None and turn.screened else None
    if signal is not None and signal.level is CrisisLevel.URGENT \
            and not signal.about_someone_else:
        return _urgent(state, ctx, signal)
    asked = state
    if state.safety_asked:
        answer = _safety_answer(turn, ctx)
        if answer is True:
            return _urgent(state, ctx, _confirmed(signal))
        if answer is False:
            noted = Reply(ctx.translator.gettext(
                "Thank you for answering. If that changes at any point, /sos shows who you can "
                "talk to."))
            resumed = resume(dialogues, replace(state, safety_asked=False), ctx)
            return replace(resumed, replies=(noted, *resumed.replies), safety_answered=True)
        if state.go_on and turn.answers and turn.command != "cancel":
            # The dialogue waited for this answer, so the message answers nothing else: a
            # sign of its own asks again, anything else moves the dialogue on.
            if signal is not None and not signal.about_someone_else:
                danger = about_danger(signal.category)
                return Outcome(state=replace(state, safety_danger=danger), signal=signal,
                               replies=(safety_question(ctx, danger),))
            moved = resume(dialogues, replace(state, safety_asked=False), ctx)
            lead = () if signal is None else (concern_reply(ctx),)
            return replace(moved, replies=(*lead, *moved.replies), signal=signal,
                           safety_answered=True)
        state = replace(state, safety_asked=False, safety_danger=False)
    outcome = _answer(dialogues, state, turn, ctx) if turn.answers \
        else Outcome(state=state, replies=())
    if outcome.state == state and signal is None:
        # Not an answer (a wrong one, or none open): an open safety question stays open,
        # and with no other question open it is the one asked again.
        outcome = replace(outcome, state=asked)
        if asked.safety_asked and outcome.unplaced:
            return replace(outcome, replies=(safety_question(ctx, asked.safety_danger,
                                                             again=True),), unplaced=False)
    if signal is None:
        return outcome
    if signal.about_someone_else:
        return replace(outcome, replies=(concern_reply(ctx), *outcome.replies), signal=signal,
                       unplaced=False)
    danger = about_danger(signal.category)
    return replace(outcome, replies=(safety_question(ctx, danger),),
                   state=replace(outcome.state, safety_asked=True, safety_danger=danger),
                   signal=signal,
                   unplaced=False)


def _answer(dialogues: DialogueSet, state: ConversationState, turn: Turn,
            ctx: Context) -> Outcome:
    """The message as an answer to the open question, or a command about it."""
    if turn.command == "cancel":
        return cancel(dialogues, state, ctx)
    run = _Run(dialogues, state, ctx)
    tr = ctx.translator
    if not run.stack:
        run.say(tr.gettext("There is no open question right now. "
                           "Send /help to see what we can do together."))
        return replace(run.outcome(), unplaced=turn.text is not None and turn.button is None
                       and turn.command is None)
    current = run.current()
    if current is None:
        return run.outcome()
    dialogue, step = current
    if step.ask.type == "none":
        run.enter(step.id)
        return run.outcome()
    if turn.command == "back":
        run.back(dialogue, step)
        return run.outcome()
    if turn.command == "skip":
        run.skip(dialogue, step)
        return run.outcome()
    if turn.button is not None:
        token, _, raw = turn.button.partition(":")
        if token != step_token(dialogue.id, step.id):
            run.say(tr.gettext("That button belongs to an earlier question. "
                               "Here is where we are now:"))
            run.show(dialogue.id, step)
            return run.outcome()
    else:
        raw = turn.text or ""
    value = parse_answer(step.ask, raw, tr, ctx.today)
    if isinstance(value, Invalid):
        run.say(value.hint, run.buttons(dialogue.id, step))
        return run.outcome()
    run.save(dialogue, step, value)
    if run.safety is None:  # else the dialogue waits for the safety question's answer
        run.follow(step)
    return run.outcome()
