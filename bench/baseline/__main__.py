"""`python -m bench.baseline API_URL DATA_FILE`: run the baseline bot by long polling until
SIGTERM (run_polling then flushes the pickle file)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from telegram import Update
from telegram.warnings import PTBUserWarning

from bench.baseline.bot import build

TOKEN = "123456:TEST-TOKEN"

if __name__ == "__main__":
    # per_message=False with button handlers: the usual setup, and the usual warning.
    warnings.filterwarnings("ignore", category=PTBUserWarning)
    api_url, data_file = sys.argv[1:3]
    build(TOKEN, api_url, Path(data_file)).run_polling(
        allowed_updates=[Update.MESSAGE, Update.EDITED_MESSAGE, Update.CALLBACK_QUERY])
