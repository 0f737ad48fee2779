"""The yardstick: the goal-setting conversation written the usual way, with
python-telegram-bot's ConversationHandler, PicklePersistence and `reply_text`."""
