from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import Context, ConversationState, Outcome, Turn, handle, resume, start
from bot.engine.runner import step_token


def say(dialogues: DialogueSet, outcome: Outcome, ctx: Context, *texts: str) -> Outcome:
    for text in texts:
        outcome = handle(dialogues, outcome.state, Turn(text=text), ctx)
    return outcome


def texts(outcome: Outcome) -> list[str]:
    return [r.text for r in outcome.replies]


def test_start_passes_through_talk_and_stops_at_the_first_question(
    dialogues: DialogueSet, ctx: Context
) -> None:
    outcome = start(dialogues, ConversationState(), "all_types", ctx)
    assert texts(outcome) == ["Hello \u2068Ana\u2069.", "A number from 0 to 100?"]
    assert outcome.state.stack[-1].step == "number"


def test_a_whole_dialogue_with_every_type_and_a_branch(
    dialogues: DialogueSet, ctx: Context
) -> None:
    outcome = start(dialogues, ConversationState(), "all_types", ctx)
    outcome = say(dialogues, outcome, ctx, "42.5")
    scale_reply = outcome.replies[-1]
    assert [b.label for b in scale_reply.buttons] == ["0", "1", "2", "3", "4", "5"]
    outcome = say(dialogues, outcome, ctx, "4")
    choice = outcome.replies[-1]
    assert choice.text == "A choice?"
    outcome = handle(dialogues, outcome.state, Turn(button=choice.buttons[1].data), ctx)
    yes = outcome.replies[-1].buttons[0]
    assert yes.label == "Yes"
    outcome = handle(dialogues, outcome.state, Turn(button=yes.data), ctx)
    outcome = say(dialogues, outcome, ctx, "7:15", "2026-12-24", "My {name} text")
    assert texts(outcome) == [
        "A: \u2068My {name} text\u2069 at 7:15\u202fAM on December 24, 2026, 42.5."]
    assert outcome.finished == ("all_types",)
    assert not outcome.state.active
    assert outcome.state.variables == {
        "t.number": 42.5, "t.scale": 4, "t.choice": "blue", "t.yes": True, "t.time": "07:15",
        "t.date": "2026-12-24", "t.text": "My {name} text",
    }
    assert [a.variable for a in outcome.saved] == ["t.text"]


def test_the_other_branch(dialogues: DialogueSet, ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "all_types", ctx)
    outcome = say(dialogues, outcome, ctx, "1", "1", "red", "no", "7", "today", "Fine")
    assert texts(outcome) == ["B: Red."]


def test_a_wrong_answer_re_asks_and_keeps_the_state(dialogues: DialogueSet, ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "all_types", ctx)
    outcome = say(dialogues, outcome, ctx, "1", "1", "red", "no", "7", "today")
    before = outcome.state
    outcome = say(dialogues, outcome, ctx, "x" * 5000)
    assert outcome.state == before
    assert outcome.saved == ()
    assert texts(outcome) == ["That is 5,000 characters; please keep it to 500 at most. "
                              "The heart of it is enough."]
    outcome = say(dialogues, outcome, ctx, "ok")
    assert outcome.finished == ("all_types",)


def test_a_wrong_choice_shows_the_buttons_again(dialogues: DialogueSet, ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "all_types", ctx)
    outcome = say(dialogues, outcome, ctx, "1", "1", "green")
    assert [b.label for b in outcome.replies[-1].buttons] == ["Red", "Blue"]
    assert outcome.state.stack[-1].step == "choice"


def test_back_returns_to_the_previous_question(dialogues: DialogueSet, ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "all_types", ctx)
    outcome = handle(dialogues, outcome.state, Turn(command="back"), ctx)
    assert texts(outcome)[0].startswith("This is the first question")
    outcome = say(dialogues, outcome, ctx, "5", "3")
    outcome = handle(dialogues, outcome.state, Turn(command="back"), ctx)
    assert texts(outcome) == ["A scale?"]
    outcome = handle(dialogues, outcome.state, Turn(command="back"), ctx)
    assert texts(outcome) == ["A number from 0 to 100?"]
    outcome = say(dialogues, outcome, ctx, "6")
    assert outcome.state.variables["t.number"] == 6
    assert outcome.state.stack[-1].step == "scale"


def test_skip_only_where_allowed(dialogues: DialogueSet, ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "all_types", ctx)
    refused = handle(dialogues, outcome.state, Turn(command="skip"), ctx)
    assert refused.state == outcome.state
    assert "cannot be skipped" in refused.replies[0].text
    outcome = say(dialogues, outcome, ctx, "1", "1", "red", "no", "7", "today")
    outcome = handle(dialogues, outcome.state, Turn(command="skip"), ctx)
    assert outcome.state.variables["t.text"] is None
    assert texts(outcome) == ["B: Red."]


def test_cancel_stops_and_keeps_answers(dialogues: DialogueSet, ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "all_types", ctx)
    outcome = say(dialogues, outcome, ctx, "9")
    outcome = handle(dialogues, outcome.state, Turn(command="cancel"), ctx)
    assert not outcome.state.active
    assert outcome.state.variables == {"t.number": 9}
    idle = handle(dialogues, outcome.state, Turn(text="hello?"), ctx)
    assert "no open question" in idle.replies[0].text
    assert idle.state == outcome.state


def test_a_stale_button_is_answered_politely(dialogues: DialogueSet, ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "all_types", ctx)
    outcome = say(dialogues, outcome, ctx, "1")
    old_button = outcome.replies[-1].buttons[2]
    outcome = handle(dialogues, outcome.state, Turn(button=old_button.data), ctx)
    stale = handle(dialogues, outcome.state, Turn(button=old_button.data), ctx)
    assert stale.state == outcome.state
    assert texts(stale) == ["That button belongs to an earlier question. Here is where we are "
                            "now:", "A choice?"]
    forged = handle(dialogues, outcome.state, Turn(button=f"{step_token('all_types', 'choice')}"
                                                           ":purple"), ctx)
    assert forged.state == outcome.state
    assert "pick one of the options" in forged.replies[0].text


def test_call_and_return(dialogues: DialogueSet, ctx: Context) -> None:
    outcome = start(dialogues, ConversationState(), "outer", ctx)
    outcome = say(dialogues, outcome, ctx, "first")
    assert texts(outcome) == ["Inner question?"]
    assert [f.dialogue for f in outcome.state.stack] == ["outer", "inner"]
    outcome = say(dialogues, outcome, ctx, "deep")
    assert outcome.finished == ("inner",)
    assert texts(outcome) == ["Back in outer with \u2068deep\u2069."]
    outcome = say(dialogues, outcome, ctx, "yes")
    assert outcome.finished == ("outer",)
    assert not outcome.state.active


def test_plural_forms(dialogues: DialogueSet, ctx: Context) -> None:
    one = say(dialogues, start(dialogues, ConversationState(), "streak", ctx), ctx, "1")
    many = say(dialogues, start(dialogues, ConversationState(), "streak", ctx), ctx, "1000")
    assert texts(one) == ["1 day in a row."]
    assert texts(many) == ["1,000 days in a row."]


def _write(path: Path, say_text: str, step: str = "q") -> None:
    path.write_text(
        f"id: edited\ntitle: t\nstart: {step}\nsteps:\n"
        f"  {step}:\n    say: '{say_text}'\n    ask: {{type: text, save: e.x}}\n    next: done\n"
        "  done:\n    say: 'Done.'\n    next: end\n"
    )


def test_a_text_edit_keeps_the_user_where_they_are(tmp_path: Path, ctx: Context) -> None:
    _write(tmp_path / "edited.yaml", "Old question?")
    outcome = start(load_dialogues(tmp_path), ConversationState(), "edited", ctx)
    _write(tmp_path / "edited.yaml", "New question?")
    edited = load_dialogues(tmp_path)
    assert texts(resume(edited, outcome.state, ctx)) == ["New question?"]
    outcome = say(edited, outcome, ctx, "answer")
    assert texts(outcome) == ["Done."]


def test_a_removed_step_restarts_with_an_apology(tmp_path: Path, ctx: Context) -> None:
    _write(tmp_path / "edited.yaml", "Old question?", step="q")
    outcome = start(load_dialogues(tmp_path), ConversationState(), "edited", ctx)
    _write(tmp_path / "edited.yaml", "Renamed question?", step="renamed")
    edited = load_dialogues(tmp_path)
    moved = say(edited, outcome, ctx, "an answer to the old question")
    assert texts(moved)[0].startswith("Sorry, this conversation has changed")
    assert texts(moved)[1] == "Renamed question?"
    assert moved.state.stack[-1].step == "renamed"
    assert "e.x" not in moved.state.variables


def test_a_removed_dialogue_ends_politely(tmp_path: Path, ctx: Context,
                                          dialogues: DialogueSet) -> None:
    _write(tmp_path / "edited.yaml", "Q?")
    outcome = start(load_dialogues(tmp_path), ConversationState(), "edited", ctx)
    gone = say(dialogues, outcome, ctx, "hello")
    assert not gone.state.active
    assert "no longer available" in texts(gone)[0]


def test_state_round_trips_through_plain_data(dialogues: DialogueSet, ctx: Context) -> None:
    outcome = say(dialogues, start(dialogues, ConversationState(), "outer", ctx), ctx, "x")
    assert ConversationState.from_dict(outcome.state.to_dict()) == outcome.state
    assert ConversationState.from_dict(None) == ConversationState()


def test_rtl_locales_isolate_user_values(dialogues: DialogueSet, ctx: Context) -> None:
    from bot.i18n import translator_for

    hebrew = replace(ctx, translator=translator_for("he"), name="Dana")
    outcome = start(dialogues, ConversationState(), "outer", hebrew)
    outcome = say(dialogues, outcome, hebrew, "x", "Run 10k")
    assert "\u2068Run 10k\u2069" in texts(outcome)[0]


def test_a_crisis_stops_coaching_and_points_to_real_help(
    dialogues: DialogueSet, ctx: Context
) -> None:
    outcome = start(dialogues, ConversationState(), "all_types", ctx)
    outcome = say(dialogues, outcome, ctx, "5")
    italian = replace(ctx, country="IT")
    crisis = handle(dialogues, outcome.state, Turn(text="non voglio più vivere"), italian)
    assert crisis.crisis
    assert not crisis.state.active
    assert crisis.state.variables == outcome.state.variables
    assert crisis.saved == ()
    text = crisis.replies[0].text
    assert "pausing our coaching" in text
    assert "Telefono Amico" in text and "02 2327 2327" in text
    assert "non voglio" not in text
    again = handle(dialogues, crisis.state, Turn(text="I want to die"), ctx)
    assert again.crisis
    assert "findahelpline.com" in again.replies[0].text


def test_a_fresh_answer_is_empty_each_time_the_dialogue_starts_or_is_called(
    dialogues: DialogueSet, ctx: Context
) -> None:
    rated = say(dialogues, start(dialogues, ConversationState(), "anew", ctx), ctx, "yes", "4")
    assert texts(rated) == ["Rated 4 this time."]
    assert rated.state.variables["anew.rating"] == 4
    for dialogue in ("anew", "anew_caller"):  # last time's 4 is still saved
        outcome = say(dialogues, start(dialogues, rated.state, dialogue, ctx), ctx, "no")
        assert texts(outcome) == ["Not rated this time."]
        assert outcome.state.variables["anew.rating"] is None
        assert [a.variable for a in outcome.saved] == ["anew.offer"]
