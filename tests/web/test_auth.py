"""The pure checks: Telegram's initData, one-time login tokens, Host and Origin."""

from __future__ import annotations

import pytest

from aipager.web.auth import (AuthError, Logins, check_init_data, host_allowed, origin_allowed)

from .conftest import TOKEN, init_data

USER = {"id": 77, "first_name": "Ana", "username": "ana"}


def test_telegrams_signature_names_the_user():
    user = check_init_data(init_data(USER), TOKEN)
    assert (user.id, user.username, user.first_name) == (77, "ana", "Ana")


def test_the_age_is_counted_from_now():
    # fields and key fixed: the same data-check string always gives the same hash
    data = init_data(USER, auth_date=1_700_000_000)
    assert check_init_data(data, TOKEN, now=1_700_000_100).id == 77


@pytest.mark.parametrize("forge", [
    lambda d: d.replace("ana", "eve"),                       # a field changed after signing
    lambda d: init_data(USER, token="999999:" + "B" * 35),  # another bot's signature
    lambda d: d.split("&hash=")[0],                         # no signature
    lambda d: d + "&hash=00",                                # a repeated field
    lambda d: "",
])
def test_forged_initdata_is_refused(forge):
    with pytest.raises(AuthError):
        check_init_data(forge(init_data(USER)), TOKEN)


def test_initdata_older_than_an_hour_is_refused():
    # an hour by default: a leaked initData (a proxy's log, a shared screen) signs in as its
    # user no longer; the age is the caller's to choose (``web_init_data_max_age``)
    now = 1_700_000_000
    data = init_data(USER, auth_date=now - 3600 - 5)
    with pytest.raises(AuthError, match="too old"):
        check_init_data(data, TOKEN, now=now)
    assert check_init_data(init_data(USER, auth_date=now - 3595), TOKEN, now=now).id == 77
    assert check_init_data(data, TOKEN, now=now, max_age=2 * 3600).id == 77


def test_initdata_from_the_future_is_refused_beyond_a_minutes_skew():
    # signed by Telegram with a date ahead (a stolen bot token's forgery made to outlive
    # max_age): refused, while a clock a few seconds behind Telegram's still signs in
    now = 1_700_000_000
    assert check_init_data(init_data(USER, auth_date=now + 55), TOKEN, now=now).id == 77
    for ahead in (61, 3600, 10 * 365 * 24 * 3600):
        with pytest.raises(AuthError, match="future"):
            check_init_data(init_data(USER, auth_date=now + ahead), TOKEN, now=now,
                            max_age=24 * 3600)


def test_initdata_without_a_user_is_refused():
    data = init_data(USER).replace("user=", "viewer=")
    with pytest.raises(AuthError):
        check_init_data(data, TOKEN)


def test_a_login_token_works_once_and_gives_a_session():
    now = [1000.0]
    logins = Logins(clock=lambda: now[0])
    token = logins.issue()
    cookie = logins.exchange(token)
    assert cookie and logins.signed_in(cookie)
    assert logins.exchange(token) is None  # used up
    assert not logins.signed_in("forged") and not logins.signed_in(None)
    logins.sign_out(cookie)
    assert not logins.signed_in(cookie)


def test_a_login_token_expires():
    now = [1000.0]
    logins = Logins(clock=lambda: now[0])
    token = logins.issue()
    now[0] += 2 * 24 * 3600
    assert logins.exchange(token) is None


def test_host_and_origin():
    hosts = frozenset({"127.0.0.1:7180"})
    assert host_allowed("127.0.0.1:7180", hosts)
    assert not host_allowed("evil.example:7180", hosts) and not host_allowed(None, hosts)
    origins = frozenset({"http://127.0.0.1:7180"})
    assert origin_allowed({"Origin": "http://127.0.0.1:7180"}, origins)
    assert not origin_allowed({"Origin": "http://evil.example"}, origins)
    assert origin_allowed({"Sec-Fetch-Site": "same-origin"}, origins)
    assert not origin_allowed({"Sec-Fetch-Site": "cross-site"}, origins)
    assert not origin_allowed({}, origins)
