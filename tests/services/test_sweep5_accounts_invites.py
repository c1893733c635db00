"""An admin's invites die with the admin's say: they kept letting strangers make accounts after
the admin who sent them was disabled or made an ordinary user again."""

from __future__ import annotations

import pytest

from benchgen.core.context import Principal
from benchgen.core.errors import PermissionDenied
from benchgen.services.accounts import signup, users
from tests.services.test_account_links import ANON, set_mode, sign_up
from tests.support import OPERATOR, World


def invite(world: World, admin: str, email: str) -> str:
    """The secret of an invite `admin` sends to `email`."""
    made = world.do(Principal.web(admin), signup.create_invite, email)
    return made.link.rsplit("=", 1)[1]


@pytest.fixture
def admins(world: World) -> tuple[str, str]:
    set_mode(world, "invite")
    return world.user("root@example.com", admin=True), world.user("deputy@example.com", admin=True)


@pytest.mark.both_backends
def test_a_disabled_admins_invites_stop_working(world: World, admins: tuple[str, str]) -> None:
    """Disabling the admin left their open invites usable for up to seven days."""
    root, deputy = admins
    theirs = invite(world, deputy, "bob@example.com")
    mine = invite(world, root, "carol@example.com")
    world.do(Principal.web(root), users.set_active, deputy, False)
    assert world.do(ANON, signup.invite_email, theirs) is None
    with pytest.raises(PermissionDenied):
        sign_up(world, "bob@example.com", invite=theirs)
    sign_up(world, "carol@example.com", invite=mine)  # another admin's invite stands
    statuses = {i.email: i.status_at(i.expires_at) for i in world.do(OPERATOR, signup.list_invites)}
    assert statuses["bob@example.com"] == "expired"
    # Another admin may invite the address again; enabling the account brings nothing back.
    world.do(Principal.web(root), users.set_active, deputy, True)
    assert world.do(ANON, signup.invite_email, theirs) is None
    sign_up(world, "bob@example.com", invite=invite(world, root, "bob@example.com"))


def test_an_admin_made_ordinary_loses_their_invites(world: World, admins: tuple[str, str]) -> None:
    """Revoking admin rights left the invites sent with them usable."""
    root, deputy = admins
    theirs = invite(world, deputy, "bob@example.com")
    world.do(Principal.web(root), users.set_admin, deputy, False)
    assert world.do(ANON, signup.invite_email, theirs) is None
    world.do(Principal.web(root), users.set_admin, deputy, True)
    assert world.do(ANON, signup.invite_email, theirs) is None


def test_the_operators_invites_are_nobodys_to_lose(world: World, admins: tuple[str, str]) -> None:
    """Invites the operator sends from the command line belong to no account."""
    root, deputy = admins
    secret = world.do(OPERATOR, signup.create_invite, "bob@example.com").link.rsplit("=", 1)[1]
    world.do(Principal.web(root), users.set_active, deputy, False)
    assert world.do(ANON, signup.invite_email, secret) == "bob@example.com"
