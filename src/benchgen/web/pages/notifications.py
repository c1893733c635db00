"""Personal settings: where my run notifications go (mail, a signed webhook)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import Response

from benchgen.core.context import Context
from benchgen.core.errors import InvalidInput
from benchgen.services.runs import notifications
from benchgen.services.runs.notifications import NotificationSettings
from benchgen.web.pages.accounts import field_problems
from benchgen.web.session import WebContext, csrf_checked
from benchgen.web.templating import render

router = APIRouter(dependencies=[Depends(csrf_checked)], include_in_schema=False)
FIELDS = ("email_on_finish", "webhook_url", "rotate_secret")


@router.get("/settings/notifications", name="notifications")
def notifications_page(request: Request, ctx: WebContext) -> Response:
    """Mail me when a run ends, and/or call my webhook."""
    return _page(request, ctx, notifications.get_notification_settings(ctx))


@router.post("/settings/notifications", name="notifications_save")
def notifications_save(
    request: Request,
    ctx: WebContext,
    email_on_finish: Annotated[str, Form(max_length=10)] = "",
    webhook_url: Annotated[str, Form(max_length=notifications.MAX_URL + 100)] = "",
    rotate_secret: Annotated[str, Form(max_length=10)] = "",
) -> Response:
    """Save the settings. A new signing secret is shown on the answer, this once: the page is
    answered directly rather than redirected so the secret is never put in a URL or cookie."""
    try:
        saved = notifications.update_notification_settings(
            ctx, bool(email_on_finish), webhook_url or None, bool(rotate_secret)
        )
    except InvalidInput as exc:
        # As typed, with the secret as stored: its checkbox stays, a problem beside it.
        secret = notifications.get_notification_settings(ctx).has_webhook_secret
        typed = NotificationSettings(bool(email_on_finish), webhook_url, secret)
        return _page(request, ctx, typed, field_problems(exc, FIELDS), 422)
    response = _page(request, ctx, saved, notice="Your notification settings are saved.")
    if saved.webhook_secret:
        # The one page that holds the secret must not be kept by the browser or a proxy.
        response.headers["cache-control"] = "no-store"
    return response


def _page(
    request: Request,
    ctx: Context,
    shown: NotificationSettings,
    problems: dict[str, str] | None = None,
    status_code: int = 200,
    notice: str = "",
) -> Response:
    return render(
        request,
        "settings/notifications.html",
        status_code,
        settings=shown,
        problems=problems or {},
        notice=notice,
    )
