"""User accounts: creation, argon2 password hashing, sign-in, the admin flag."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import or_, select, update
from sqlalchemy.exc import IntegrityError

from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    invalid,
)
from benchgen.core.ids import new_id
from benchgen.core.permissions import SESSION_KINDS, Action
from benchgen.core.statuses import RUN_ACTIVE, TRAINING_ACTIVE
from benchgen.core.text import require_line
from benchgen.db.tables import Run, TrainingJob, User
from benchgen.services import access, audit
from benchgen.services.accounts import _signouts, lookalikes, mail
from benchgen.services.specs import check_window

MIN_PASSWORD = 8
MAX_PASSWORD = 1024
MAX_USER_PAGE = 200
MAX_SEARCH = 320
MAX_EMAIL = 320


@dataclass(frozen=True)
class UserView:
    """What the edges may show of a user (never the password hash)."""

    id: str
    email: str
    display_name: str
    is_admin: bool
    is_active: bool
    email_verified_at: datetime | None = None


def view(user: User) -> UserView:
    """The public shape of a user row."""
    return UserView(
        user.id,
        user.email,
        user.display_name,
        user.is_admin,
        user.is_active,
        user.email_verified_at,
    )


def _hasher(settings: Settings) -> PasswordHasher:
    return PasswordHasher(
        time_cost=settings.argon2_time_cost, memory_cost=settings.argon2_memory_kib
    )


def normalize_email(raw: str) -> str:
    """A syntactically valid, lower-cased address (no DNS lookups: no network at run time).

    Raises:
        InvalidInput: not an email address, longer than 320 characters, one that reads as
            another (full-width letters, mixed alphabets, stray marks: `lookalikes`), or one
            that mail could not be sent to as it is written (an encoded word `=?utf-8?b?…?=`).
    """
    # Imported here: its RFC tables take a few percent of a command's start to load, and most
    # commands (every one that resolves `--as`) only look an address up.
    from email_validator import EmailNotValidError, validate_email

    # Checked before parsing: the parser takes about a second on a form's worth of text.
    if len(raw) > MAX_EMAIL:
        raise invalid(["email"], f"must be at most {MAX_EMAIL} characters")
    try:
        checked = validate_email(raw.strip(), check_deliverability=False)
    except EmailNotValidError as exc:
        raise invalid(["email"], str(exc)) from exc
    address = checked.normalized.lower()
    # Full-width letters (`ａｎａ@`) and other compatibility forms would make a second account
    # that reads as another's in every list of members.
    plain = unicodedata.normalize("NFKC", address)
    if plain != address:
        raise invalid(
            ["email"], f"has look-alike characters (full-width, ligatures): write {plain}"
        )
    look_alike = lookalikes.problem(address)
    if look_alike:
        raise invalid(["email"], look_alike)
    # Checked as stored (lower-cased): what is kept must be what the mail goes to.
    problem = mail.address_problem(address)
    if problem is not None:
        raise invalid(["email"], problem)
    return address


def lookup_email(raw: str) -> str:
    """`raw` as an account stores it (`normalize_email`), to find the account: typed as at
    sign-up (a full-width domain, decomposed accents) it must find the same one. Anything that
    is no address comes back trimmed and lower-cased: it finds nothing, and says no more."""
    try:
        return normalize_email(raw)
    except InvalidInput:
        return raw.strip().lower()[:MAX_EMAIL]


def create_user(
    ctx: Context, email: str, password: str, display_name: str = "", is_admin: bool = False
) -> UserView:
    """Create an account (admins and the operator only).

    The email counts as verified at once: whoever creates an account for someone vouches for
    its address (as the demo and every account made before sign-up existed rely on). Accounts
    made through sign-up verify theirs with an emailed link (`links.verify_email`).

    Raises:
        PermissionDenied: the principal may not create accounts.
        InvalidInput: bad email, a password shorter than 8 characters, or a display name with
            control, bidirectional or invisible characters.
        Conflict: the email is taken.
    """
    access.require(ctx, Action.ADMIN_USERS)
    user = insert_user(ctx, email, password, display_name, is_admin=is_admin, verified=True)
    audit.record(
        ctx, audit.AuditAction.USER_CREATE, "user", user.id, email=user.email, is_admin=is_admin
    )
    return view(user)


def insert_user(
    ctx: Context,
    email: str,
    password: str,
    display_name: str = "",
    *,
    is_admin: bool = False,
    verified: bool = False,
) -> User:
    """Check and store a new account. No permission check and no audit: `create_user` (admins)
    and `signup.sign_up` (the deployment's sign-up mode) decide who may, and record it.

    Raises:
        InvalidInput: bad email, password or display name.
        Conflict: the email is taken.
    """
    address = normalize_email(email)
    name = require_line(display_name, ["display_name"], required=False) or address.split("@")[0]
    if len(name) > 200:
        raise invalid(["display_name"], "must be at most 200 characters")
    # Hashed last, once everything cheap passed: a refused sign-up rolls back the attempt it
    # counted, so each one refused after hashing cost the server a hash and the sender nothing.
    password_hash = hash_password(ctx.settings, password)
    taken = Conflict(f"An account with email {address} already exists.", {"email": address})
    if ctx.session.scalar(select(User.id).where(User.email == address)) is not None:
        raise taken
    user = User(
        id=new_id("usr"),
        email=address,
        display_name=name,
        password_hash=password_hash,
        is_admin=is_admin,
        is_active=True,
        email_verified_at=ctx.now() if verified else None,
        created_at=ctx.now(),
    )
    try:
        # The unique email decides two sign-ups at once that both found it free (on
        # PostgreSQL the second waits for the first to commit, then fails here).
        with ctx.session.begin_nested():
            ctx.session.add(user)
            ctx.session.flush()
    except IntegrityError:
        raise taken from None
    return user


def hash_password(settings: Settings, password: str) -> str:
    """The argon2 hash of an acceptable new password.

    Raises:
        InvalidInput: shorter than 8 or longer than 1024 characters.
    """
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise invalid(["password"], f"must be {MIN_PASSWORD} to {MAX_PASSWORD} characters")
    if not _is_utf8(password):
        # A terminal in another encoding hands the CLI bytes it keeps as lone surrogates.
        raise invalid(["password"], "holds bytes that are not UTF-8 text; type it again")
    return _hasher(settings).hash(password)


def _is_utf8(text: str) -> bool:
    """Whether `text` can be written as UTF-8 (no lone surrogates, which argon2 and the
    database refuse with an encoding error)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def require_own_account(ctx: Context) -> User:
    """The acting person's own live account, for what only they may do to it, signed in (the
    web app, or the CLI acting --as them): change the password, ask for a verification link.

    Raises:
        PermissionDenied: a token, the agent, a background job or the operator without --as.
        Unauthenticated: the account is disabled or the session ended.
    """
    if ctx.principal.kind not in SESSION_KINDS or ctx.principal.user_id is None:
        raise PermissionDenied(
            "Only you, signed in to the web app, can change this.", {"page": "/settings/account"}
        )
    user = access.live_user(ctx)
    if user is None:
        raise Unauthenticated("The account is disabled or the session has ended.")
    return user


def authenticate(ctx: Context, email: str, password: str) -> UserView:
    """Check a password; rehash it when the configured cost changed.

    Raises:
        Unauthenticated: unknown email, disabled account or wrong password (one message for all,
            so sign-in cannot be used to learn which emails exist).
    """
    failure = Unauthenticated("Wrong email or password.")
    user = ctx.session.scalar(select(User).where(User.email == lookup_email(email)))
    hasher = _hasher(ctx.settings)
    if user is None or not user.is_active or user.password_hash is None:
        # Spend the same time as a real check so response timing does not reveal accounts.
        hasher.hash(password)
        raise failure
    try:
        hasher.verify(user.password_hash, password)
    except (VerificationError, InvalidHashError):
        raise failure from None
    if hasher.check_needs_rehash(user.password_hash):
        user.password_hash = hasher.hash(password)
    return view(user)


def get_user_by_email(ctx: Context, email: str) -> UserView:
    """Look up an account by email (admins and the operator only).

    Raises:
        PermissionDenied: not an admin.
        NotFound: no such account.
    """
    access.require(ctx, Action.ADMIN_USERS)
    # Folded as `normalize_email` stores addresses (composed, compatibility forms plain), not
    # parsed by it: every `--as` looks an account up here, and its parser is slow to load. A
    # terminal that types accents decomposed (`a` + U+0308) found no account before.
    folded = unicodedata.normalize("NFKC", email.strip()).lower()
    found = select(User).where(User.email == folded)
    user = ctx.session.scalar(found) if _is_utf8(folded) else None
    if user is None:
        raise NotFound(f"No account with email {email}.", {"email": email})
    return view(user)


def list_users(ctx: Context, search: str = "", limit: int = 50, offset: int = 0) -> list[UserView]:
    """Accounts by email, optionally those whose email or display name contains `search`
    (any case; admins and the operator only).

    Raises:
        PermissionDenied: not an admin.
        InvalidInput: limit outside 1..200, a negative offset, or a search over 320 characters.
    """
    access.require(ctx, Action.ADMIN_USERS)
    check_window(limit, offset, MAX_USER_PAGE)
    search = search.strip()
    if len(search) > MAX_SEARCH:
        raise invalid(["search"], f"must be at most {MAX_SEARCH} characters")
    query = select(User).order_by(User.email).limit(limit).offset(offset)
    if search:
        # Escaped: a % or _ typed in the box is a character to find, not a wildcard.
        query = query.where(
            or_(
                User.email.icontains(search, autoescape=True),
                User.display_name.icontains(search, autoescape=True),
            )
        )
    return [view(user) for user in ctx.session.scalars(query)]


def get_me(ctx: Context) -> UserView:
    """The acting user.

    Raises:
        Unauthenticated: the account or credential is no longer valid.
    """
    user = access.live_user(ctx)
    if user is None:
        raise Unauthenticated("The account is disabled or the credential is no longer valid.")
    return view(user)


def set_active(ctx: Context, user_id: str, active: bool) -> UserView:
    """Disable or re-enable an account; disabling revokes its tokens and reset links, ends its
    sessions and running agent turns, withdraws the invites it made, and stops its unfinished
    runs and training jobs as if cancelled (re-enabling it brings none of them back: the person
    signs in, makes new tokens and launches again). An account already so is returned as it
    is, and nothing is recorded.

    Raises:
        PermissionDenied: not an admin.
        NotFound: no such account.
        Conflict: an admin disabling their own account (it could be the last admin's).
    """
    own = "disable your own account" if not active else ""
    user = _account_to_manage(ctx, user_id, own, "benchgen admin disable-user")
    if user.is_active == active:
        return view(user)  # nothing changes, and the audit log records changes
    user.is_active = active
    if not active:
        # Imported here because it builds on this module (a link finds its account here).
        from benchgen.services.accounts import links

        # Personal tokens and links too: an account is disabled when it may be in the wrong
        # hands, and enabling it again must not bring back what may have leaked with it (an
        # admin's invites among them: they let a stranger make an account).
        _signouts.end_sessions_of(ctx, user.id, personal_tokens=True)
        links.retire_links(ctx, links.Purpose.RESET, user.email)
        links.withdraw_invites_of(ctx, user.id)
        _stop_jobs_of(ctx, user.id)
    audit.record(
        ctx,
        audit.AuditAction.USER_ACTIVATE if active else audit.AuditAction.USER_DISABLE,
        "user",
        user.id,
    )
    return view(user)


def _stop_jobs_of(ctx: Context, user_id: str) -> None:
    """Stop a disabled account's runs and training jobs as their owner's cancel would: a queued
    one ends unstarted (nothing charged), a running one stops at its next step and settles
    what it used. Left going, whoever held the account kept spending its credits and calling
    its models' endpoints with its keys."""
    ctx.session.execute(
        update(Run)
        .where(Run.launched_by == user_id, Run.status.in_(RUN_ACTIVE))
        .values(cancel_requested=True)
    )
    ctx.session.execute(
        update(TrainingJob)
        .where(
            TrainingJob.owner_id == user_id,
            TrainingJob.status.in_(TRAINING_ACTIVE),
            TrainingJob.cancel_requested_at.is_(None),
        )
        .values(cancel_requested_at=ctx.now())
    )


def set_admin(ctx: Context, user_id: str, admin: bool) -> UserView:
    """Make an account an administrator, or an ordinary user again; it holds or loses the
    admin pages and commands from its next request, and an ordinary user again, the invites
    it made as an admin (granting admin again brings none of them back).

    Raises:
        PermissionDenied: not an admin.
        NotFound: no such account.
        Conflict: an admin removing their own rights (they could be the last admin).
    """
    own = "remove your own admin rights" if not admin else ""
    user = _account_to_manage(ctx, user_id, own, "benchgen admin revoke-admin")
    if user.is_admin != admin:
        user.is_admin = admin
        if not admin:
            # Imported here because it builds on this module (a link finds its account here).
            from benchgen.services.accounts import links

            links.withdraw_invites_of(ctx, user.id)
        action = (
            audit.AuditAction.USER_GRANT_ADMIN if admin else audit.AuditAction.USER_REVOKE_ADMIN
        )
        audit.record(ctx, action, "user", user.id)
    return view(user)


def _account_to_manage(ctx: Context, user_id: str, own: str, command: str) -> User:
    """The account an admin changes; `own`, when given, is what an admin may not do to their
    own account (it could be the last admin's), which another admin or `command` can."""
    access.require(ctx, Action.ADMIN_USERS)
    # Both accounts locked in one order and read again, then the admin checked again: two
    # admins demoting or disabling each other at the same moment both went through, leaving
    # no admin at all.
    ids = sorted({user_id, ctx.principal.user_id or user_id})
    locking = select(User).where(User.id.in_(ids)).order_by(User.id).with_for_update(key_share=True)
    ctx.session.scalars(locking.execution_options(populate_existing=True)).all()
    access.require(ctx, Action.ADMIN_USERS)
    user = ctx.session.get(User, user_id)
    if user is None:
        raise NotFound("No such account.", {"id": user_id})
    if own and user.id == ctx.principal.user_id:
        raise Conflict(
            f"You cannot {own}: another admin can, or the operator with `{command}`.",
            {"id": user.id},
        )
    return user


def lock_user(ctx: Context, user_id: str) -> None:
    """Serialise concurrent spending and creating by one user for the rest of the transaction.

    Raises:
        NotFound: no such account.
        Unauthenticated: the account is the acting user's, and was disabled since the request
            checked it.
    """
    # A row lock on PostgreSQL; on SQLite the write transaction already holds the database
    # lock from BEGIN IMMEDIATE, and SQLAlchemy leaves the clause out. FOR NO KEY UPDATE, not
    # FOR UPDATE: it still serialises every caller of this function, but it does not conflict
    # with the key-share lock a foreign-key check takes when a row referencing the user is
    # written. With FOR UPDATE, two transactions that each wrote such a row and then came here
    # deadlocked (each waiting for the other's key share).
    locking = select(User.is_active).where(User.id == user_id).with_for_update(key_share=True)
    active = ctx.session.scalar(locking)
    if active is None:
        raise NotFound("No such account.", {"id": user_id})
    # Read under the lock, not from the request's first look: an admin who disabled the
    # account in between stopped its runs then, and one launched after that ran unstopped.
    if not active and user_id == ctx.principal.user_id:
        raise Unauthenticated("The account is disabled or the credential is no longer valid.")
