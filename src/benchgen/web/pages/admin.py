"""Administration (admins only): users, credits, sign-up mode and the agent's switches.

Every service called here requires an `admin.*` action itself, so a person who is not an
admin gets the 403 page from the first call, whatever the page does.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import Response

from benchgen.core.config import Settings
from benchgen.core.context import Context
from benchgen.core.errors import Conflict, InvalidInput
from benchgen.core.permissions import Action
from benchgen.services import access, deployment, overrides
from benchgen.services.accounts import credits, users
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import redirect, render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
PAGE_SIZE = 50
_WHOLE = re.compile(r"[+-]?[0-9]{1,12}")
Problems = dict[str, str]


@router.get("/admin", name="admin")
def admin_home(request: Request, ctx: WebContext) -> Response:
    """The admin overview: where each part of administration lives."""
    access.require(ctx, Action.ADMIN_USERS)
    return render(request, "admin/home.html")


@router.get("/admin/users", name="admin_users")
def user_list(
    request: Request,
    ctx: WebContext,
    q: Annotated[str, Query(max_length=320)] = "",
    start: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Response:
    """Accounts, searchable by email or name, with their controls and the form to add one."""
    return _users_page(request, ctx, q, start)


def _users_page(
    request: Request,
    ctx: Context,
    q: str = "",
    start: int = 0,
    status: int = 200,
    problems: Problems | None = None,
    typed: dict[str, Any] | None = None,
) -> Response:
    found = users.list_users(ctx, q, PAGE_SIZE + 1, start)
    shown = found[:PAGE_SIZE]
    return render(
        request,
        "admin/users.html",
        status,
        users=shown,
        balances=credits.list_balances(ctx, [user.id for user in shown]),
        more=len(found) > PAGE_SIZE,
        q=q,
        start=start,
        page_size=PAGE_SIZE,
        problems=problems or {},
        typed={"email": "", "display_name": "", "is_admin": False, **(typed or {})},
    )


@router.post("/admin/users", name="admin_user_create")
def user_create(
    request: Request,
    ctx: WebContext,
    # No length limits here: a refused field would lose the form; the service checks them.
    email: Annotated[str, Form()],
    password: Annotated[str, Form()],
    display_name: Annotated[str, Form()] = "",
    is_admin: Annotated[bool, Form()] = False,
) -> Response:
    """Create an account; its owner signs in with the password given here."""
    try:
        made = users.create_user(ctx, email, password, display_name, is_admin=is_admin)
    except (InvalidInput, Conflict) as exc:
        # The password is never sent back into the page.
        typed = {"email": email, "display_name": display_name, "is_admin": is_admin}
        problems = {"create": exc.message}
        return _users_page(request, ctx, status=exc.http_status, problems=problems, typed=typed)
    return redirect(request, "admin_users", flash=f"Created the account {made.email}.")


@router.post("/admin/users/{user_id}/active", name="admin_user_active")
def user_active(
    request: Request, ctx: WebContext, user_id: str, active: Annotated[bool, Form()]
) -> Response:
    """Disable an account (its sessions, tokens, runs and training jobs stop) or enable it
    again."""
    changed = users.set_active(ctx, user_id, active)
    verb = "Enabled" if changed.is_active else "Disabled"
    return redirect(request, "admin_users", flash=f"{verb} the account {changed.email}.")


@router.post("/admin/users/{user_id}/admin", name="admin_user_admin")
def user_admin(
    request: Request, ctx: WebContext, user_id: str, admin: Annotated[bool, Form()]
) -> Response:
    """Make an account an administrator, or an ordinary user again."""
    changed = users.set_admin(ctx, user_id, admin)
    role = "an administrator" if changed.is_admin else "an ordinary user"
    return redirect(request, "admin_users", flash=f"{changed.email} is now {role}.")


@router.post("/admin/users/{user_id}/credits", name="admin_credits")
def grant(
    request: Request,
    ctx: WebContext,
    user_id: str,
    amount: Annotated[str, Form()] = "",
    note: Annotated[str, Form()] = "",
) -> Response:
    """Add credits to an account; a refusal shows beside that account's fields, as typed."""
    # What is not a whole number goes to the service as 0, which it refuses with the message
    # for every amount it cannot take (before, "1.5" was a bare 422 page that lost the form).
    typed = amount.strip()
    whole = int(typed) if _WHOLE.fullmatch(typed) else 0
    try:
        balance = credits.grant_credits(ctx, user_id, whole, note)
    except InvalidInput as exc:
        first = exc.errors[0] if exc.errors else {}
        field = next((str(part) for part in first.get("loc", [])), "amount")
        problems = {f"{field}-{user_id}": str(first.get("msg", exc.message))}
        granting = {"granting": user_id, "amount": amount, "note": note}
        return _users_page(request, ctx, status=422, problems=problems, typed=granting)
    return redirect(
        request, "admin_users", flash=f"Granted {whole} credits; the balance is now {balance}."
    )


@router.get("/admin/settings", name="admin_settings")
def settings_page(request: Request, ctx: WebContext) -> Response:
    """The settings an admin may change while the server runs."""
    return _settings_page(request, ctx)


def _settings_page(
    request: Request, ctx: Context, status: int = 200, problems: Problems | None = None
) -> Response:
    rows = [_setting_row(key, value) for key, value in deployment.list_settings(ctx).items()]
    return render(request, "admin/settings.html", status, rows=rows, problems=problems or {})


def _setting_row(key: str, value: Any) -> dict[str, Any]:
    """How one setting is shown: a checkbox, a whole number, or a choice among its values."""
    kind = overrides.OVERRIDABLE[key]
    field = Settings.model_fields.get(key)
    row: dict[str, Any] = {
        "key": key,
        "label": key.replace("_", " ").capitalize(),
        "hint": field.description if field is not None and field.description else "",
        "value": value,
        "input": "checkbox" if kind is bool else "number" if kind is int else "select",
        "choices": [],
    }
    if kind is str:
        row["choices"] = list(overrides.CHOICES[key])
    if kind is int:
        # The service's own bounds, so the browser stops a value it would refuse.
        row["min"], row["max"] = deployment.number_bounds(key)
    return row


@router.post("/admin/settings", name="admin_setting_save")
def setting_save(
    request: Request,
    ctx: WebContext,
    key: Annotated[str, Form(max_length=80)],
    # An unticked checkbox sends nothing: for a switch, no value means off.
    value: Annotated[str, Form(max_length=100)] = "false",
) -> Response:
    """Change one setting; it applies at once, to the next turn or request that reads it."""
    try:
        saved = deployment.set_setting(ctx, key, value)
    except InvalidInput as exc:
        # A key no form on the page carries (a hand-made request) is told above the forms.
        where = key if key in overrides.OVERRIDABLE else ""
        return _settings_page(request, ctx, 422, {where: exc.message})
    return redirect(request, "admin_settings", flash=f"Saved: {key} is now {saved}.")
