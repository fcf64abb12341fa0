"""The AdmissionReview v1 envelope: typed envelope, raw objects.

The request is validated with pydantic (``extra="allow"``: fields a newer API
server adds pass through), but ``object`` / ``oldObject`` stay the raw dicts the
API server sent: re-serialising a model of a whole Kubernetes object would lose
fields we do not model.  Responses are plain dicts, encoded with orjson.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from kustodian.policy.store import kind_key


class GroupVersionKind(BaseModel):
    model_config = ConfigDict(extra="allow")
    group: str = ""
    version: str = ""
    kind: str


class GroupVersionResource(BaseModel):
    model_config = ConfigDict(extra="allow")
    group: str = ""
    version: str = ""
    resource: str


class UserInfo(BaseModel):
    model_config = ConfigDict(extra="allow")
    username: str = ""
    uid: str = ""
    groups: list[str] = Field(default_factory=list)


class AdmissionRequest(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    uid: str = Field(min_length=1)
    kind: GroupVersionKind
    resource: GroupVersionResource
    sub_resource: str = Field("", alias="subResource")
    name: str = ""
    namespace: str = ""
    operation: str
    user_info: UserInfo = Field(default_factory=UserInfo, alias="userInfo")
    object: Any = None
    old_object: Any = Field(None, alias="oldObject")
    dry_run: bool = Field(False, alias="dryRun")

    @property
    def kind_key(self) -> str:
        return f"{self.kind.kind}.{self.kind.group}" if self.kind.group else self.kind.kind

    @property
    def subject(self) -> dict[str, Any] | None:
        """The object the request is about: ``oldObject`` on DELETE, else ``object``."""
        obj = self.old_object if self.operation == "DELETE" else self.object
        return obj if isinstance(obj, dict) else None


class AdmissionReview(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    api_version: str = Field(alias="apiVersion", pattern=r"^admission\.k8s\.io/v1$")
    kind: str = Field(pattern=r"^AdmissionReview$")
    request: AdmissionRequest


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
    "AdmissionRequest", "AdmissionReview", "Answer", "allowed", "denied", "kind_key", "patched",
    "review_response",
]
