"""coachbot: a coaching companion on Telegram, between sessions with a human coach."""
