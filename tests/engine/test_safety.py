"""The two crisis levels in the engine: urgent stops coaching; a possible risk (or a very low
mood) is answered as usual and followed by one direct safety question. The detector is
replaced here by a fixed verdict per message, so these tests pin the flow, not the model
(tests/engine/test_crisis.py and bench.crisis measure the model)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.dialogue import DialogueSet
from bot.engine import Context, ConversationState, Outcome, Turn, handle, resume, runner, start
from bot.engine.crisis import CrisisCategory, CrisisLevel, CrisisSignal
from bot.i18n import translator_for

POSSIBLE = "MARKER possible risk"
URGENT = "MARKER urgent risk"
SOMEONE_ELSE = "MARKER my sister"
THREATENED = "MARKER he said he would hurt me"
VERDICTS = {
    POSSIBLE: CrisisSignal(CrisisLevel.CHECK, CrisisCategory.INDIRECT_IDEATION, 0.8, ("t",)),
    URGENT: CrisisSignal(CrisisLevel.URGENT, CrisisCategory.PLAN_MEANS, 0.99, ("t",)),
    SOMEONE_ELSE: CrisisSignal(CrisisLevel.CHECK, CrisisCategory.CONCERN_OTHER, 0.9, ("t",)),
    THREATENED: CrisisSignal(CrisisLevel.CHECK, CrisisCategory.THREATENED, 0.8, ("t",)),
}


@pytest.fixture(autouse=True)
def fixed_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "detect_crisis", lambda text: VERDICTS.get(text))


AGAIN = ("Before we go on, I would still like to know, because it matters: are you having "
         "thoughts of ending your life or of hurting yourself?")


def texts(outcome: Outcome) -> list[str]:
    return [r.text for r in outcome.replies]


def first_answer(dialogues: DialogueSet, ctx: Context, dialogue_id: str, text: str) -> Outcome:
    """The dialogue started, and its first question answered with ``text``."""
    outcome = start(dialogues, ConversationState(), dialogue_id, ctx)
    return handle(dialogues, outcome.state, Turn(text=text), ctx)


def at_note(dialogues: DialogueSet, ctx: Context) -> Outcome:
    return first_answer(dialogues, ctx, "mood", "6")


def test_a_possible_risk_keeps_the_answer_and_asks_one_direct_question(
    dialogues: DialogueSet, ctx: Context
) -> None:
    outcome = handle(dialogues, at_note(dialogues, ctx).state, Turn(text=POSSIBLE), ctx)
    assert not outcome.crisis and outcome.signal == VERDICTS[POSSIBLE]
    assert outcome.state.safety_asked
    (question,) = outcome.replies
    assert "thoughts of ending your life" in question.text
    assert [b.data for b in question.buttons] == [runner.SAFETY_YES, runner.SAFETY_NO]
    assert [(a.variable, a.value) for a in outcome.saved] == [("m.note", POSSIBLE)]
    assert outcome.state.stack == ()  # the dialogue went on to its end
    assert ConversationState.from_dict(outcome.state.to_dict()).safety_asked


def test_no_goes_on_exactly_where_the_dialogue_stands(dialogues: DialogueSet,
                                                      ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "mood", ctx)
    outcome = handle(dialogues, outcome.state, Turn(text="2"), ctx)  # a very low mood
    assert outcome.state.safety_asked and outcome.saved[0].value == 2
    assert texts(outcome) != ["What is on your mind?"]
    answered = handle(dialogues, outcome.state, Turn(button=runner.SAFETY_NO), ctx)
    assert texts(answered) == [
        "Thank you for answering. If that changes at any point, /sos shows who you can talk to.",
        "What is on your mind?"]
    assert not answered.state.safety_asked and not answered.crisis
    assert answered.state.variables["m.mood"] == 2


def worse(dialogues: DialogueSet, ctx: Context) -> Outcome:
    return first_answer(dialogues, ctx, "worse", "Worse")


def test_a_choice_in_safety_on_is_asked_about_before_anything_else(
    dialogues: DialogueSet, ctx: Context
) -> None:
    asked = worse(dialogues, ctx)
    (question,) = asked.replies
    # A tapped button is not met with what sounds like a verdict: the question is for everyone.
    assert question.text == ("Thank you for telling me. When things feel this low, I ask "
                             "everyone directly, because it matters: are you having thoughts "
                             "of ending your life or of hurting yourself?")
    assert [(a.variable, a.value) for a in asked.saved] == [("w.today", "worse")]
    restored = ConversationState.from_dict(asked.state.to_dict())
    assert restored == asked.state and restored.safety_asked and restored.go_on
    assert texts(resume(dialogues, restored, ctx)) == [AGAIN]  # after a restart
    better = handle(dialogues, start(dialogues, ConversationState(), "worse", ctx).state,
                    Turn(text="Better"), ctx)
    assert texts(better) == ["Glad to hear it."] and not better.state.safety_asked


def test_no_to_a_choice_goes_on_with_every_text_that_follows_it(
    dialogues: DialogueSet, ctx: Context
) -> None:
    answered = handle(dialogues, worse(dialogues, ctx).state, Turn(text="no"), ctx)
    assert texts(answered) == [
        "Thank you for answering. If that changes at any point, /sos shows who you can talk to.",
        "I am sorry it is hard.", "Here is who you can talk to."]
    assert not answered.state.active and not answered.state.safety_asked
    assert not answered.state.go_on and answered.safety_answered and not answered.crisis
    assert answered.state.variables["w.today"] == "worse"


def test_after_a_choice_a_sign_asks_again_and_anything_else_moves_on(
    dialogues: DialogueSet, ctx: Context
) -> None:
    asked = worse(dialogues, ctx)
    again = handle(dialogues, asked.state, Turn(text=POSSIBLE), ctx)
    assert texts(again) == [runner.safety_question(ctx, False).text]  # told something new
    assert again.state == asked.state
    assert again.signal == VERDICTS[POSSIBLE]
    assert handle(dialogues, asked.state, Turn(button=runner.SAFETY_YES), ctx).crisis
    moved_on = handle(dialogues, asked.state, Turn(text="I don't know"), ctx)
    assert texts(moved_on) == ["I am sorry it is hard.", "Here is who you can talk to."]
    assert moved_on.safety_answered and not moved_on.state.safety_asked
    worried = handle(dialogues, asked.state, Turn(text=SOMEONE_ELSE), ctx)
    assert "worried about someone." in texts(worried)[0]
    assert texts(worried)[1:] == texts(moved_on)
    stopped = handle(dialogues, asked.state, Turn(command="cancel"), ctx)
    assert not stopped.state.active and not stopped.state.go_on


def test_a_question_about_danger_asked_again_keeps_to_danger(
    dialogues: DialogueSet, ctx: Context
) -> None:
    asked = handle(dialogues, ConversationState(), Turn(text=THREATENED), ctx)
    assert texts(asked) == ["Thank you for telling me. I would like to ask you directly, "
                            "because it matters: are you in danger right now, or afraid that "
                            "you or someone else could get hurt?"]
    restored = ConversationState.from_dict(asked.state.to_dict())
    assert restored.safety_danger
    again = ["Before we go on, I would still like to know, because it matters: are you in "
             "danger right now, or afraid that you or someone else could get hurt?"]
    assert texts(resume(dialogues, restored, ctx)) == again  # no "thank you": nothing new
    assert texts(handle(dialogues, restored, Turn(text="hm"), ctx)) == again
    later = start(dialogues, restored, "mood", ctx)
    assert "whether you were in danger or afraid that you or someone else could get hurt" \
        in texts(later)[0] and not later.state.safety_danger
    asked_after = handle(dialogues, later.state, Turn(text="1"), ctx)  # a very low mood
    assert "thoughts of ending your life" in texts(asked_after)[0]


def test_a_mood_of_three_is_not_asked_about(dialogues: DialogueSet, ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "mood", ctx)
    outcome = handle(dialogues, outcome.state, Turn(text="3"), ctx)
    assert texts(outcome) == ["What is on your mind?"] and not outcome.state.safety_asked


@pytest.mark.parametrize(("locale", "yes"), [("en", "yes"), ("he", "כן"), ("it", "sì")])
def test_yes_in_words_or_by_button_is_the_urgent_path(
    dialogues: DialogueSet, ctx: Context, locale: str, yes: str
) -> None:
    local = replace(ctx, translator=translator_for(locale), country="IL")
    asked = handle(dialogues, at_note(dialogues, local).state, Turn(text=POSSIBLE), local)
    for turn in (Turn(text=yes), Turn(button=runner.SAFETY_YES)):
        outcome = handle(dialogues, asked.state, turn, local)
        assert outcome.crisis and not outcome.state.safety_asked and not outcome.state.active
        assert "1201" in outcome.replies[0].text  # ERAN, Israel's emotional first aid line
        # Audited and counted like any signal: what fired is the answer, never its words.
        assert outcome.signal == CrisisSignal(
            CrisisLevel.URGENT, CrisisCategory.EXPLICIT_IDEATION, 1.0,
            (runner.SAFETY_YES_FIRED,))


def test_a_yes_with_a_sign_of_its_own_keeps_what_fired(dialogues: DialogueSet,
                                                       ctx: Context) -> None:
    asked = handle(dialogues, at_note(dialogues, ctx).state, Turn(text=POSSIBLE), ctx)
    outcome = handle(dialogues, asked.state, Turn(text=POSSIBLE, button=runner.SAFETY_YES),
                     ctx)
    assert outcome.crisis and outcome.signal is not None
    assert outcome.signal.level is CrisisLevel.URGENT
    assert outcome.signal.category is CrisisCategory.INDIRECT_IDEATION
    assert outcome.signal.fired[-1] == runner.SAFETY_YES_FIRED


def test_another_message_moves_on_and_an_unanswered_question_opens_gently(
    dialogues: DialogueSet, ctx: Context
) -> None:
    outcome = start(dialogues, ConversationState(), "mood", ctx)
    asked = handle(dialogues, outcome.state, Turn(text="1"), ctx)
    again = resume(dialogues, asked.state, ctx)  # /start while it is open: asked again
    assert texts(again) == [AGAIN] and again.state.safety_asked
    # Written past it: the dialogue goes on, and the message answers no question it did not
    # see yet.
    moved_on = handle(dialogues, asked.state, Turn(text="work, mostly"), ctx)
    assert not moved_on.state.safety_asked and moved_on.safety_answered
    assert texts(moved_on) == ["What is on your mind?"]
    assert moved_on.saved == () and "m.note" not in moved_on.state.variables
    later = start(dialogues, asked.state, "mood", replace(ctx, country="IT"))
    # The next check-in opens with the emergency number itself, not only /sos.
    assert texts(later)[0].split("\n") == [
        "Before we start: last time, I asked you directly whether you were having thoughts of "
        "ending your life or of hurting yourself, and I do not know how you are now. If you "
        "are having such thoughts now, please do not keep them to yourself: tell someone you "
        "trust.",
        f"{_DANGER} call the emergency number now: 112.",
        "/sos shows who else you can talk to. To stop here for today, send /cancel."]
    assert texts(later)[1] == "How are you feeling, from 1 to 10?"
    assert not later.state.safety_asked


def test_urgent_stops_at_once_and_keeps_nothing_of_the_message(
    dialogues: DialogueSet, ctx: Context
) -> None:
    outcome = handle(dialogues, at_note(dialogues, ctx).state, Turn(text=URGENT), ctx)
    assert outcome.crisis and outcome.saved == () and not outcome.state.active
    assert "pausing our coaching" in outcome.replies[0].text
    assert URGENT not in outcome.replies[0].text


def test_worry_for_someone_else_gets_lines_to_pass_on_and_the_dialogue_goes_on(
    dialogues: DialogueSet, ctx: Context
) -> None:
    outcome = handle(dialogues, at_note(dialogues, ctx).state, Turn(text=SOMEONE_ELSE), ctx)
    assert not outcome.crisis and not outcome.state.safety_asked
    assert "worried about someone." in texts(outcome)[0]
    assert texts(outcome)[1] == "Thank you."


def test_a_caption_or_command_argument_is_only_checked(dialogues: DialogueSet,
                                                       ctx: Context) -> None:
    before = at_note(dialogues, ctx)
    outcome = handle(dialogues, before.state, Turn(text=POSSIBLE, answers=False), ctx)
    assert outcome.saved == () and outcome.state.stack == before.state.stack
    assert outcome.state.safety_asked and len(outcome.replies) == 1
    quiet = handle(dialogues, before.state, Turn(text="a photo of my desk", answers=False), ctx)
    assert quiet.replies == () and quiet.state == before.state


def test_sos_lists_the_help_lines_in_the_clients_language(ctx: Context) -> None:
    hebrew = replace(ctx, translator=translator_for("he"), country="IL")
    text = runner.sos_reply(hebrew, ConversationState()).text
    assert "1201" in text and "101" in text and "100" in text


def test_sos_ends_on_the_help_and_says_a_question_can_wait_only_when_one_is_open(
    dialogues: DialogueSet, ctx: Context
) -> None:
    waiting = "Whenever you want, we can pick up where we left off. There is no hurry."
    idle = runner.sos_reply(ctx, ConversationState()).text
    assert waiting not in idle and idle.endswith("crisis-centres-helplines/")
    open_question = at_note(dialogues, ctx).state
    assert runner.sos_reply(ctx, open_question).text.endswith("\n\n" + waiting)
    asked = handle(dialogues, open_question, Turn(text=POSSIBLE), ctx).state
    assert asked.safety_asked and runner.sos_reply(ctx, replace(asked, stack=())).text.endswith(
        waiting)


_DANGER = ("If you have hurt yourself or feel you might, or you or someone else is in "
           "immediate danger,")


@pytest.mark.parametrize(("country", "first_line"), [
    ("IT", f"{_DANGER} call the emergency number now: 112."),
    ("CA", f"{_DANGER} call the emergency number now: 911."),
    ("uk", f"{_DANGER} call the emergency number now: 999."),
    ("AU", f"{_DANGER} call the emergency number now: 000."),
    (None, f"{_DANGER} call your local emergency number now (112 in the EU, 911 in North "
           "America, 999 in the UK)."),
    ("ZA", f"{_DANGER} call your local emergency number now (112 in the EU, 911 in North "
           "America, 999 in the UK)."),
])
def test_the_emergency_number_is_the_clients_countrys_when_it_is_known(
    ctx: Context, country: str | None, first_line: str
) -> None:
    lines = runner.sos_reply(replace(ctx, country=country), ConversationState()).text.split("\n")
    assert lines[2] == first_line
    assert "findahelpline.com" in lines[-1] or "iasp.info" in lines[-1]


def test_the_emergency_number_is_not_listed_twice(ctx: Context) -> None:
    text = runner.sos_reply(replace(ctx, country="IT"), ConversationState()).text
    assert text.count("112") == 1 and "Numero unico di emergenza" not in text
    assert "Telefono Amico Italia: 02 2327 2327" in text


def test_emergency_numbers_by_country() -> None:
    from bot.engine.crisis import emergency_number

    assert [emergency_number(c) for c in ("ES", "hr", "NO", "GB", "UK", "US", "IL")] == [
        "112", "112", "112", "999", "999", "911", "101"]
    assert emergency_number(None) is None and emergency_number("XX") is None
