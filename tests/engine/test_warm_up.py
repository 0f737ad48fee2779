"""Starting the bot reads and compiles the engine's data before the first message."""

from __future__ import annotations

from bot.engine import crisis, places, warm_up


def test_warm_up_leaves_nothing_to_load_for_the_first_message() -> None:
    loaders = (crisis._all_phrases, crisis._all_exceptions, crisis._helplines,
               places._zone_countries, places._names)
    for loader in loaders:
        loader.cache_clear()
    warm_up()
    assert [loader.cache_info().currsize for loader in loaders] == [1] * len(loaders)
