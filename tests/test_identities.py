"""What ``--run-as`` accepts for batch grading, without making anyone (see tests/test_run_as.py for real users)."""
import pwd

import pytest

from autograder.sandbox import identities


@pytest.mark.parametrize("value, reason", [
    ("root", "is root"),
    ("no-such-user-7f3a", "no user named 'no-such-user-7f3a'"),
    (",", "name at least one user"),
    ("Bad Prefix*", "cannot start a user name"),
    ("x" * 30 + "*", "cannot start a user name"),
])
def test_unusable_pools_are_refused_with_the_reason(value, reason):
    with pytest.raises(identities.IdentityError, match=reason):
        identities.pool(value, jobs=2)


def test_one_user_named_twice_is_refused():
    someone = next((u for u in pwd.getpwall() if u.pw_uid != 0), None)
    if someone is None:
        pytest.skip("no unprivileged user on this machine")
    with pytest.raises(identities.IdentityError, match="different users"):
        identities.pool(f"{someone.pw_name},{someone.pw_name}", jobs=2)
    assert [u.pw_uid for u in identities.pool(someone.pw_name, jobs=4).users] == [someone.pw_uid]
