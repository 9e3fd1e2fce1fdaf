"""POST /chatops/slack: Slack slash commands, signed with the app's signing secret.

Order of checks: no SLACK_SIGNING_SECRET configured -> 404 problem (the endpoint is disabled on
this deployment); a missing, stale (over 5 minutes), forged or tampered signature -> 401 problem
and nothing runs; a valid signature seen before inside the window (a replay) -> 401 problem, as a
stale one is: the request is Slack's but not new, which is an authentication failure, not a
conflict the sender could resolve (409); Slack's own retry of it (``X-Slack-Retry-Num``) -> the
first attempt's answer again (service/chatops/replay.py, per replica). Otherwise the form's
``text`` is answered with a Slack message (200), also when the text is not a command (the usage)
or names something unknown (the closest names).
The body is read raw (the signature covers its exact bytes) and parsed here.
"""

from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import parse_qs

from litestar import Request, Response, post
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIMediaType, OpenAPIType, Operation, RequestBody, Schema
from litestar.params import HeaderParameter
from sqlalchemy.ext.asyncio import AsyncSession

from service.api.cached_catalogue import CACHED_CATALOGUE
from service.api.problems import problem_response, problems
from service.chatops import run, signature
from service.chatops.replay import ReplayGuard
from service.chatops.slack import SlackMessage

Session = NamedDependency[AsyncSession]
FORM = "application/x-www-form-urlencoded"
SLACK_FIELDS = ("text", "command", "user_id", "user_name", "team_id", "channel_id", "response_url")


@dataclass
class SlashCommandOperation(Operation):
    """Documents the form body Slack posts (the handler reads it raw, to check the signature)."""

    def __post_init__(self) -> None:
        properties: dict[str, Schema | Any] = {
            name: Schema(type=OpenAPIType.STRING, max_length=4000) for name in SLACK_FIELDS
        }
        properties["text"] = Schema(
            type=OpenAPIType.STRING,
            max_length=4000,
            description="The command, e.g. `plan llama-3.1-70b on h100 bf16 40x8192`; "
            "`help` lists them",
        )
        self.request_body = RequestBody(
            required=True,
            description="A Slack slash command (form-encoded, as Slack sends it)",
            content={
                FORM: OpenAPIMediaType(
                    schema=Schema(type=OpenAPIType.OBJECT, properties=properties)
                )
            },
        )


SignatureHeader = Annotated[
    str | None,
    HeaderParameter(
        name="X-Slack-Signature",
        max_length=200,
        description="v0= + hex HMAC-SHA256 of v0:{timestamp}:{raw body}",
    ),
]
TimestampHeader = Annotated[
    str | None,
    HeaderParameter(
        name="X-Slack-Request-Timestamp",
        max_length=40,
        description="Seconds since the epoch; at most 5 minutes from now",
    ),
]
RetryHeader = Annotated[
    int | None,
    HeaderParameter(
        name="X-Slack-Retry-Num",
        ge=1,
        le=10,
        description="Set by Slack on a retry (1-3): answered with the first attempt's answer",
    ),
]


@post(
    "/chatops/slack",
    middleware=CACHED_CATALOGUE,
    status_code=200,
    tags=["chatops"],
    summary="Answer a Slack slash command (plan, matrix, offload, gpus, models, help)",
    description=(
        "Signed by Slack (SLACK_SIGNING_SECRET). 401: missing, stale, forged or tampered "
        "signature, or a signature already answered inside its 5-minute window (a replay; "
        "nothing runs). A retry (X-Slack-Retry-Num) gets the first attempt's answer. "
        "404: chat commands are disabled (no secret configured)."
    ),
    operation_class=SlashCommandOperation,
    responses=problems(400, 401, 404, 413),
)
async def slack_command(
    request: Request[Any, Any, Any],
    db_session: Session,
    x_slack_signature: SignatureHeader = None,
    x_slack_request_timestamp: TimestampHeader = None,
    x_slack_retry_num: RetryHeader = None,
) -> Response[SlackMessage]:
    secret = request.app.state.settings.slack_signing_secret
    if not secret:
        return problem_response(  # type: ignore[return-value]
            request,
            404,
            "chat commands are disabled on this deployment: set SLACK_SIGNING_SECRET to enable "
            "POST /chatops/slack",
            type_="urn:gpu-planner:chatops-disabled",
        )
    body = await request.body()
    replays: ReplayGuard = request.app.state.slack_replays
    timestamp, sent_signature = x_slack_request_timestamp, x_slack_signature
    why = signature.check(secret, timestamp, sent_signature, body, replays.clock())
    if why is not None:
        return _unauthorized(request, why, "urn:gpu-planner:bad-slack-signature")
    assert timestamp is not None and sent_signature is not None  # check() refuses them missing
    retry = x_slack_retry_num is not None
    claim = replays.claim(timestamp, sent_signature, body, retry=retry)
    if claim.verdict == "replay":
        return _unauthorized(
            request,
            "this signed request was already answered (a replay); Slack's own retries carry "
            "X-Slack-Retry-Num",
            "urn:gpu-planner:replayed-slack-request",
        )
    while claim.verdict == "retry":
        if (stored := await claim.stored()) is not None:
            return Response(stored)
        # The first attempt failed (and was forgotten): compute here, or wait on another retry.
        claim = replays.claim(timestamp, sent_signature, body, retry=True)
    form = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    text = (form.get("text") or [""])[0]
    try:
        answer = await run.answer(db_session, text, request.app.state.settings.public_base_url)
    except BaseException as exc:
        replays.failed(claim, exc)
        raise
    replays.answered(claim, answer)
    return Response(answer)


def _unauthorized(request: Request[Any, Any, Any], why: str, type_: str) -> Response[SlackMessage]:
    return problem_response(  # type: ignore[return-value]
        request,
        401,
        why,
        type_=type_,
        headers={"WWW-Authenticate": 'Slack-Signature realm="gpu-planner-chatops"'},
    )


chatops_handlers = [slack_command]
