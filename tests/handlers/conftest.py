"""Handler tests: users talking to the real application in process (tests/inprocess.py)."""

from tests.flows import fixed_detector
from tests.inprocess import bot

__all__ = ["bot", "fixed_detector"]
