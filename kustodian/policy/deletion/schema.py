"""The rule schema: what an admin may write in Helm values or a ConfigMap.

A rule says "a *provider* object may not be deleted while *dependent* objects
match it", and *how* they match.  Matchers are a closed set of named types
because each one must be answerable from a watch-cache index (see
``matchers.py``): a free-form expression language could not promise a decision in
a few dict lookups with 50,000 PersistentVolumes in the cache.

Field names are camelCase, as everywhere else in Kubernetes configuration, and
unknown fields are refused (``extra="forbid"``) so that a typo never silently
turns a guard off.  The models only describe shape; cross-field checks that need
Rook knowledge (does this provider kind have pools?) live in ``rules.py``.
"""

from __future__ import annotations

import re
import string
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from kustodian.policy.kinds import suggestions

_KIND_KEY = re.compile(r"^[A-Z][A-Za-z0-9]*(\.[a-z0-9]([a-z0-9.-]*[a-z0-9])?)?$")
_FIELD_PATH = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
_LIST_FIELD_PATH = re.compile(r"^[A-Za-z0-9_-]+(\.([A-Za-z0-9_-]+|\*))*$")
TEMPLATE_PLACEHOLDERS = frozenset({"name", "namespace"})


def _kind_key(value: str) -> str:
    if not _KIND_KEY.match(value):
        # kubectl's spellings (pvc, cephblockpools, sc) are not kind keys, but say which one was meant
        close = suggestions(value) if value else []
        hint = " (did you mean " + " or ".join(repr(c) for c in close) + "?)" if close else ""
        raise ValueError(
            f"must be a kind key like 'PersistentVolume' or 'CephBlockPool.ceph.rook.io', not {value!r}{hint}"
        )
    return value


def _field_path(value: str) -> str:
    if not _FIELD_PATH.match(value):
        raise ValueError(f"must be a dotted field path like 'spec.storageClassName', not {value!r}")
    return value


def _list_field_path(value: str) -> str:
    if not _LIST_FIELD_PATH.match(value):
        raise ValueError(
            f"must be a dotted field path like 'spec.rados.pool' ('*' walks a list), not {value!r}"
        )
    return value


def _template(value: str) -> str:
    try:
        names = {fname for _, fname, _, _ in string.Formatter().parse(value) if fname is not None}
    except ValueError as exc:
        raise ValueError(f"bad template {value!r}: {exc}") from None
    unknown = names - TEMPLATE_PLACEHOLDERS
    if unknown:
        raise ValueError(
            f"unknown placeholder(s) {sorted(unknown)} in {value!r}; use {{name}} or {{namespace}}"
        )
    return value


def _non_empty(value: str) -> str:
    if not value:
        raise ValueError("must not be empty")
    return value


KindKey = Annotated[str, AfterValidator(_kind_key)]
FieldPath = Annotated[str, AfterValidator(_field_path)]
ListFieldPath = Annotated[str, AfterValidator(_list_field_path)]
Template = Annotated[str, AfterValidator(_template)]
NonEmpty = Annotated[str, AfterValidator(_non_empty)]
Scalar = bool | int | float | str | None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=False)


class Condition(_Model):
    """The dependent's ``field`` equals ``equals`` (e.g. ``spec.mirroring.enabled`` is ``true``)."""

    field: FieldPath
    equals: Scalar


class SkipIf(_Model):
    """Skip the rule when an object of ``kind`` in the provider's namespace has ``field == equals``.

    Rook's ``CephCluster.spec.cleanupPolicy.allowUninstallWithVolumes`` is the motivating case.
    """

    kind: KindKey
    field: FieldPath
    equals: Scalar


class SameNamespace(_Model):
    """Every dependent in the provider's namespace (optionally only those meeting ``where``)."""

    type: Literal["same-namespace"]
    where: tuple[Condition, ...] = ()


class FieldRef(_Model):
    """The dependent's ``field`` equals one of ``values`` (templates over the provider, default its name).

    ``scope: namespace`` also requires the dependent to live in the provider's namespace, or to
    name that namespace in ``namespaceField`` (CephObjectStoreUser ``spec.clusterNamespace``);
    ``scope: cluster`` ignores namespaces (a PVC in any namespace naming a StorageClass).
    ``valuesFrom`` takes the values from fields of the provider instead (a ``*`` segment walks a
    list): a ClientProfileMapping's ``spec.mappings.*.localClientProfile``.
    """

    type: Literal["field-ref"]
    field: FieldPath
    scope: Literal["namespace", "cluster"] = "namespace"
    values: tuple[Template, ...] = ("{name}",)
    values_from: tuple[ListFieldPath, ...] = ()
    namespace_field: FieldPath | None = None
    where: tuple[Condition, ...] = ()

    @model_validator(mode="after")
    def _needs_values(self) -> FieldRef:
        if not self.values:
            raise ValueError("values must not be empty (default: ['{name}'])")
        if self.values_from and "values" in self.model_fields_set:
            raise ValueError("give values or valuesFrom, not both")
        return self


class Hop(_Model):
    """Objects of ``kind`` whose ``field`` names the provider, in the provider's namespace."""

    kind: KindKey
    field: FieldPath


class ViaRef(_Model):
    """The dependent's ``field`` names an object that refers to the provider (``via``).

    Two hops, both indexed: the ``via`` objects naming the provider (CephObjectStoreUsers whose
    ``spec.accountRef.name`` is the account), then the dependents naming one of them by
    ``namespace/name``, the namespace read from ``namespaceField`` or the dependent's own
    (ObjectBuckets whose ``spec.additionalState.cephUser`` is one of those users, in
    ``spec.additionalState.objectStoreNamespace``).
    """

    type: Literal["via-ref"]
    via: Hop
    field: FieldPath
    namespace_field: FieldPath | None = None


class PoolRef(_Model):
    """One of the dependent's ``fields`` names a pool of the provider (same namespace).

    A ``*`` segment walks a list (``spec.sharedPools.poolPlacements.*.dataPoolName``).
    ``implicit`` pools are used by *every* dependent whatever its fields say: Rook runs each
    CephNFS on the ``.nfs`` pool and each CephNVMeOFGateway on ``.nvmeof``.
    """

    type: Literal["pool-ref"]
    fields: tuple[ListFieldPath, ...] = ()
    implicit: tuple[NonEmpty, ...] = ()

    @model_validator(mode="after")
    def _needs_fields(self) -> PoolRef:
        if not self.fields and not self.implicit:
            raise ValueError("needs fields or implicit pools")
        return self


class CapsPool(_Model):
    """A Ceph capability string under the dependent's ``field`` grants ``pool=<a provider pool>``."""

    type: Literal["caps-pool"]
    field: FieldPath = "spec.caps"


class CsiVolume(_Model):
    """A PersistentVolume whose CSI volume attributes point at the provider.

    The driver must end with ``driverSuffix`` (the operator namespace prefix is unknown to
    us), ``volumeAttributes[clusterIdAttribute]`` must be one of the provider's CSI cluster
    IDs (its namespace, or the hashed ``status.info.clusterID`` of the RADOS namespaces and
    subvolume groups it holds, see ``rook_matchers.provider_cluster_ids``), and one of
    ``poolAttributes`` must name a provider pool or one of ``nameAttributes`` the provider;
    with ``matchAll`` every volume of the driver under those cluster IDs matches.
    """

    type: Literal["csi-volume"]
    driver_suffix: NonEmpty
    cluster_id_attribute: NonEmpty = "clusterID"
    pool_attributes: tuple[NonEmpty, ...] = ()
    name_attributes: tuple[NonEmpty, ...] = ()
    match_all: bool = False

    @model_validator(mode="after")
    def _needs_attributes(self) -> CsiVolume:
        if not self.pool_attributes and not self.name_attributes and not self.match_all:
            raise ValueError("needs poolAttributes, nameAttributes or matchAll")
        return self


class StorageClassRef(_Model):
    """The dependent's ``field`` names a StorageClass that points at the provider.

    The StorageClass provisioner must end with ``provisionerSuffix``, its
    ``parameters[namespaceParameter]`` must be one of the provider's cluster IDs (as for
    ``csi-volume``), and one of ``poolParameters`` must name a provider pool or one of
    ``nameParameters`` the provider.

    A dependent that carries any of ``unlessSet`` is placed by that field instead (a bound PV's
    own volume attributes, an ObjectBucket's ``additionalState``): StorageClass parameters are
    immutable, so a class "re-pointed" to another pool is a new class under the old name, and
    the volumes made from the old one are not in the new pool.
    """

    type: Literal["storage-class-ref"]
    field: FieldPath = "spec.storageClassName"
    provisioner_suffix: NonEmpty
    namespace_parameter: NonEmpty
    pool_parameters: tuple[NonEmpty, ...] = ()
    name_parameters: tuple[NonEmpty, ...] = ()
    unless_set: tuple[FieldPath, ...] = ()

    @model_validator(mode="after")
    def _needs_parameters(self) -> StorageClassRef:
        if not self.pool_parameters and not self.name_parameters:
            raise ValueError("needs poolParameters or nameParameters")
        return self


class CosiBucket(_Model):
    """A COSI Bucket (directly or through its BucketClass) provisioned from the provider object store."""

    type: Literal["cosi-bucket"]


class MultisitePeerZones(_Model):
    """The peer CephObjectZones of the master zone a multisite CephObjectStore serves.

    Rook (``CephObjectStoreDependents``) refuses to delete the store of a master zone that still
    has peers: the peers would lose their source of truth.  See ``rook_matchers`` for how the
    master is told from the peers without asking RGW.
    """

    type: Literal["multisite-peer-zones"]
    #: match the master zone's CephObjectZoneGroup instead, unless it is annotated
    #: ``kustodian.io/zones-outside-cluster: "none"``: zones of other Kubernetes clusters are
    #: invisible here, so only the admin can say there are none
    outside_cluster: bool = False


Matcher = Annotated[
    SameNamespace
    | FieldRef
    | ViaRef
    | PoolRef
    | CapsPool
    | CsiVolume
    | StorageClassRef
    | CosiBucket
    | MultisitePeerZones,
    Field(discriminator="type"),
]
MATCHER_TYPES = (
    "same-namespace",
    "field-ref",
    "via-ref",
    "pool-ref",
    "caps-pool",
    "csi-volume",
    "storage-class-ref",
    "cosi-bucket",
    "multisite-peer-zones",
)


class Rule(_Model):
    """``provider`` may not be deleted while a ``dependent`` object satisfies ``match``."""

    name: str = ""
    provider: KindKey
    dependent: KindKey
    match: Matcher
    skip_if: SkipIf | None = None
    # Rook's rule for multisite: a store serving a *peer* zone has no dependents (the master zone
    # holds the data), so rules about its buckets and users do not apply.  CephObjectStore only.
    skip_in_peer_zone: bool = False
    # Why these dependents block, shown after their kind: "CephObjectZones (<note>): [...]".
    note: str = ""
    # enforce | warn | audit for refusals this rule causes (issue 20); unset: the guard's mode
    mode: Literal["enforce", "warn", "audit"] | None = None
