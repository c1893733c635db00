"""`/api/v1/me/notifications`: where my run notifications go (mail, a signed webhook)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from benchgen.api.deps import ContextDep
from benchgen.api.errors import COMMON
from benchgen.api.routing import OneThreadRoute
from benchgen.services.runs import notifications
from benchgen.services.runs.notifications import NotificationSettings

router = APIRouter(
    prefix="/api/v1/me", tags=["account"], responses=COMMON, route_class=OneThreadRoute
)


class NotificationsIn(BaseModel):
    """The whole setting, replaced: leave `webhook_url` out (or null) to remove the webhook."""

    model_config = ConfigDict(extra="forbid")
    # JSON true/false only: lax pydantic read "yes" or "on" as true and turned mail on.
    email_on_finish: StrictBool = False
    webhook_url: str | None = Field(None, max_length=notifications.MAX_URL)
    rotate_secret: StrictBool = False


@router.get(
    "/notifications", response_model=NotificationSettings, openapi_extra={"x-scope": "runs"}
)
def get_notifications(ctx: ContextDep) -> NotificationSettings:
    """My notification settings; never the webhook's secret. A token needs `runs`; the agent
    can never read or change these."""
    return notifications.get_notification_settings(ctx)


@router.put(
    "/notifications", response_model=NotificationSettings, openapi_extra={"x-scope": "runs"}
)
def put_notifications(ctx: ContextDep, body: NotificationsIn) -> NotificationSettings:
    """Replace my settings. Setting a webhook (or `rotate_secret`) makes a signing secret,
    returned in `webhook_secret` this once: each request carries `X-BenchGen-Timestamp` and
    `X-BenchGen-Signature: sha256=HMAC-SHA256(secret, timestamp + "." + body)`."""
    return notifications.update_notification_settings(
        ctx, body.email_on_finish, body.webhook_url, body.rotate_secret
    )
