"""The command menu's debounce (``aipager.bot.settle``): set once per settled change."""

from __future__ import annotations

from aipager.bot.settle import Settle


def test_a_change_is_published_once_it_stays_the_same_for_quiet_seconds():
    menu = Settle(["a"], quiet=10.0, longest=60.0)
    assert menu.offer(["a"], 0.0) is None  # what is shown already
    assert menu.offer(["a", "b"], 1.0) is None
    assert menu.offer(["a", "b"], 10.9) is None
    assert menu.offer(["a", "b"], 11.0) == ["a", "b"]
    assert menu.offer(["a", "b"], 30.0) is None  # published: nothing more to do


def test_a_change_undone_before_it_settled_costs_nothing():
    menu = Settle(["a"], quiet=10.0, longest=60.0)
    assert menu.offer(["a", "b"], 0.0) is None
    assert menu.offer(["a"], 5.0) is None
    assert menu.offer(["a"], 100.0) is None


def test_a_hundred_sessions_over_four_minutes_make_a_handful_of_menus():
    """A session every 2.4 s, offered every 3 s (the chat's loop): never quiet, so the
    menu follows at most once a minute, and the last list once it settled."""
    menu: Settle[list[str]] = Settle([], quiet=9.0, longest=60.0)
    published = []
    for tick in range(0, 400):
        now = tick * 3.0
        names = [f"s{i}" for i in range(min(100, int(now / 2.4)))]
        if (shown := menu.offer(names, now)) is not None:
            published.append((now, len(shown)))
    assert 4 <= len(published) <= 6
    assert published[-1][1] == 100
    assert all(b - a >= 9.0 for (a, _), (b, _) in zip(published, published[1:], strict=False))
