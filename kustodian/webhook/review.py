"""The AdmissionReview v1 envelope: typed envelope, raw objects.

The request is validated with pydantic (``extra="allow"``: fields a newer API
server adds pass through), but ``object`` / ``oldObject`` stay the raw dicts the
API server sent: re-serialising a model of a whole Kubernetes object would lose
fields we do not model (``shapes`` checks the object fields the handlers read).
Every field admission.k8s.io/v1 defines is typed strictly, as the API server's Go
decoder reads JSON: a number is not a string, ``"true"`` is not a boolean, and
``null`` is the zero value.  A body that fails is a ``MalformedReview`` (an HTTP
400 naming each field), never a request a handler meets.  Responses are plain
dicts, encoded with orjson.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from kustodian.errors import ConfigError, FieldProblem
from kustodian.policy.store import kind_key


class MalformedReview(ConfigError):
    """A body the API server could not have sent: not JSON, not an AdmissionReview v1, or an
    object whose fields have types Kubernetes' schema excludes.  Answered with an HTTP 400 whose
    body names every field (``problems``), never with an admission decision."""

    inline = True
    #: the problems kept (a 7 MiB body can hold a million wrong values; naming 20 is enough)
    LIMIT = 20

    def __init__(self, problems: Sequence[FieldProblem | str], more: int = 0) -> None:
        kept = [p if isinstance(p, FieldProblem) else FieldProblem("", p) for p in problems[:self.LIMIT]]
        self.more = more + len(problems) - len(kept)
        self.fields: list[str] = [p.path for p in kept]  #: the field paths named (``""``: the whole body)
        super().__init__("", [*kept, *([f"and {self.more} more"] if self.more else [])])


def _null_is(default: Any) -> BeforeValidator:
    """JSON ``null`` as the API server's Go decoder reads it: the field's zero value."""
    return BeforeValidator(lambda value: default if value is None else value)


# strict: a number is not a string and "true" is not a boolean (Go's decoder refuses both)
_STRICT = ConfigDict(extra="allow", populate_by_name=True, strict=True)
_Str = Annotated[str, _null_is("")]
_Strings = Annotated[list[_Str], _null_is([])]
_Required = Annotated[str, _null_is(""), Field(min_length=1)]


class GroupVersionKind(BaseModel):
    model_config = _STRICT
    group: _Str = ""
    version: _Str = ""
    kind: _Required


class GroupVersionResource(BaseModel):
    model_config = _STRICT
    group: _Str = ""
    version: _Str = ""
    resource: _Required


class UserInfo(BaseModel):
    model_config = _STRICT
    username: _Str = ""
    uid: _Str = ""
    groups: _Strings = Field(default_factory=list)
    extra: Annotated[dict[str, _Strings], _null_is({})] = Field(default_factory=dict)


#: what the API server sends in ``operation`` (admission.k8s.io/v1 ``Operation``)
Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


class AdmissionRequest(BaseModel):
    """``request`` of an AdmissionReview v1: every field the API defines is typed as it defines
    it, so a wrong type is a 400 naming the field; fields of newer API servers pass through."""

    model_config = _STRICT
    uid: _Required
    kind: GroupVersionKind
    resource: GroupVersionResource
    sub_resource: _Str = Field("", alias="subResource")
    request_kind: GroupVersionKind | None = Field(None, alias="requestKind")
    request_resource: GroupVersionResource | None = Field(None, alias="requestResource")
    request_sub_resource: _Str = Field("", alias="requestSubResource")
    name: _Str = ""
    namespace: _Str = ""
    operation: Operation
    user_info: Annotated[UserInfo, _null_is({})] = Field(default_factory=UserInfo, alias="userInfo")
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = Field(None, alias="oldObject")
    dry_run: Annotated[bool, _null_is(False)] = Field(False, alias="dryRun")
    options: dict[str, Any] | None = None

    @property
    def kind_key(self) -> str:
        return f"{self.kind.kind}.{self.kind.group}" if self.kind.group else self.kind.kind

    @property
    def subject(self) -> dict[str, Any] | None:
        """The object the request is about: ``oldObject`` on DELETE, else ``object``."""
        return self.old_object if self.operation == "DELETE" else self.object


class AdmissionReview(BaseModel):
    model_config = _STRICT
    api_version: str = Field(alias="apiVersion", pattern=r"^admission\.k8s\.io/v1$")
    kind: str = Field(pattern=r"^AdmissionReview$")
    request: AdmissionRequest


def envelope_problems(error: ValidationError) -> MalformedReview:
    """pydantic's errors as field paths of the review (``request.userInfo.groups[0]``), the first
    ``MalformedReview.LIMIT`` of them named."""
    errors = error.errors(include_url=False)
    problems = []
    for err in errors[:MalformedReview.LIMIT]:
        path = ""
        for part in err["loc"]:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        problems.append(FieldProblem(path, err["msg"]))
    return MalformedReview(problems, more=len(errors) - len(problems))


#: a denial message longer than this is cut (kubectl prints it whole; the API server logs it)
MAX_MESSAGE = 4096


@dataclass(frozen=True)
class Answer:
    """What a feature handler decides about one request."""

    allowed: bool = True
    message: str = ""
    code: int = 200
    reason: str = ""
    patch: list[dict[str, Any]] = field(default_factory=list)
    warnings: tuple[str, ...] = ()
    # label for metrics: allowed / denied / patched / error
    decision: str = ""


def allowed(*, warnings: tuple[str, ...] = ()) -> Answer:
    return Answer(allowed=True, warnings=warnings, decision="allowed")


def denied(message: str, code: int = 403, reason: str = "Forbidden") -> Answer:
    return Answer(allowed=False, message=message, code=code, reason=reason, decision="denied")


def patched(ops: list[dict[str, Any]], *, warnings: tuple[str, ...] = ()) -> Answer:
    return Answer(allowed=True, patch=ops, warnings=warnings, decision="patched" if ops else "allowed")


def review_response(uid: str, answer: Answer) -> bytes:
    """Encode the AdmissionReview response echoing ``uid``."""
    response: dict[str, Any] = {"uid": uid, "allowed": answer.allowed}
    if not answer.allowed:
        message = answer.message if len(answer.message) <= MAX_MESSAGE else \
            f"{answer.message[:MAX_MESSAGE]}... ({len(answer.message) - MAX_MESSAGE} more characters)"
        response["status"] = {"code": answer.code, "message": message,
                              "reason": answer.reason or "Forbidden"}
    if answer.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(answer.patch)).decode()
    if answer.warnings:
        response["warnings"] = list(answer.warnings)
    return orjson.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
    )


__all__ = [
    "AdmissionRequest", "AdmissionReview", "Answer", "MalformedReview", "allowed", "denied",
    "envelope_problems", "kind_key", "patched", "review_response",
]
