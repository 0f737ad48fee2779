"""Handler tests: users talking to the real application in process (tests/inprocess.py)."""

from tests.inprocess import bot

__all__ = ["bot"]
