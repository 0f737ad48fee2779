"""What the coach's reading r24 asked of the shipped texts: a commitment is offered, never
required (daily check-in, weekly review, session recap); the crisis reply asks the client to
contact a line today and says /sos shows them again; the last care check-in says it is still
hard and points to lasting help before it asks about the pause; a coach who writes to a client
in the pause after a crisis is told first that the message waits."""

from __future__ import annotations

import pytest

from bot.dialogue import DialogueSet, load_dialogues
from bot.engine import runner
from tests.content.test_coach_reading_r11 import REPO
from tests.content.test_coach_reading_r12 import context, play
from tests.content.test_coach_reading_r14 import AT_TEN, COMMIT, NEXT_ACTION


@pytest.fixture(scope="module")
def dialogues() -> DialogueSet:
    return load_dialogues(REPO / "dialogues")


def test_the_daily_commitment_may_be_skipped(dialogues: DialogueSet) -> None:
    said, outcome = play(dialogues, "daily_checkin", ["7", "Yes", "Mornings", "/skip"])
    assert said[-2:] == [COMMIT, "Thank you for checking in, \u2068Ana\u2069."]
    assert outcome.state.variables["checkin.commitment"] is None and not outcome.state.active


def test_the_weeks_commitment_may_be_skipped(dialogues: DialogueSet) -> None:
    said, outcome = play(dialogues, "weekly_review", [*AT_TEN, "No", "/skip"])
    assert said[-2:] == [NEXT_ACTION, "Thank you for this review, \u2068Ana\u2069. I will ask "
                         "about your goal in your check-ins."]
    assert outcome.state.variables["review.next_action"] is None


def test_the_sessions_commitment_may_be_skipped(dialogues: DialogueSet) -> None:
    said, outcome = play(dialogues, "session_recap", ["Speak first", "/skip"], variables={})
    assert said[-2:] == ["What, if anything, will you do before the next session? You can "
                         "send /skip.", "Thank you, \u2068Ana\u2069. What you take away is noted."]
    assert outcome.state.variables["recap.commitment"] is None
    assert "recap.by" not in outcome.state.variables  # no date asked for nothing


@pytest.mark.parametrize(("country", "asked", "again"), [
    ("IT", "Please reach out to one of these lines as soon as you can, even if it is hard to "
           "start:", "/sos shows these lines again at any time."),
    # No country known: what follows are sites that list lines, not lines (r77-en, r81).
    (None, "These sites list the help lines in your country. Please contact one of them as "
           "soon as you can, even if it is hard to start:",
     "/sos shows these sites again at any time.")])
def test_the_crisis_reply_asks_to_contact_a_line_today_and_says_sos_shows_them(
        country: str | None, asked: str, again: str) -> None:
    lines = runner.crisis_reply(context(country=country)).text.split("\n")
    ask = lines.index(asked)
    sos = lines.index(again)
    assert lines[ask + 1].startswith("• ") and all(
        line.startswith("• ") for line in lines[ask + 1:sos])
    assert lines[-1].startswith("Please also tell someone you trust")


def test_the_last_care_check_in_still_hard_points_to_lasting_help(
        dialogues: DialogueSet) -> None:
    said, _ = play(dialogues, "care_checkin", ["About the same"], variables={"care.last": True})
    # The questions end because others can help more, not because of the client's answers.
    assert said[-1].startswith("You have told me for a few days now that it is still hard. This "
                               "was the last of these daily questions, because a doctor")
    # The referral is the message's centre, asked for, not only described (r73-en).
    assert "a doctor, or one of the lines above, can support you" in said[-1]
    assert "Please contact one of them as soon as you can." in said[-1]
    assert said[-1].endswith("Would you like all of these to stay paused for a while?")


def test_a_coach_writing_to_a_paused_client_is_told_first(dialogues: DialogueSet) -> None:
    variables = {"message.client_name": "Luca", "message.client_paused": True}
    said, outcome = play(dialogues, "message_client", ["See you Thursday"], variables=variables)
    assert said[0].startswith("Coaching with \u2068Luca\u2069 is paused: I noticed signs that "
                              "they may be in crisis. A message you write here waits until "
                              "the pause ends.")
    assert said[-1] == "Kept. It goes out to \u2068Luca\u2069 when the pause ends."
    assert outcome.finished == ("message_client",)
    said, _ = play(dialogues, "message_client", ["See you"],
                   variables={**variables, "message.client_paused": False})
    # A client's own pause does not hold it (r37-en): only their quiet hours.
    assert said[-1] == ("Done. \u2068Luca\u2069 gets it now, or as soon as their quiet hours are "
                        "over.")
