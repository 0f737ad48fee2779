from tests.fakes import fake_bot_api

__all__ = ["fake_bot_api"]
