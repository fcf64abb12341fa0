"""User story: a StorageClass's reclaim-space schedule lands on every PVC created in it."""

from __future__ import annotations

import itertools
import json
import uuid

import pytest
import yaml

from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess
from tests.e2e.stories import SCHEDULE, SOURCE, pvc, pvc_annotations, pvc_mutation_story, storage_class
from tests.support import wait_for

pytestmark = pytest.mark.api



def test_pvc_created_in_an_annotated_storageclass_carries_the_schedule(
        kube_api: KubeApi, webhook: WebhookProcess, namespace: str) -> None:
    pvc_mutation_story(kube_api, namespace)


@pytest.mark.parametrize(("value", "why"), [
    ("every day", "every day"),
    ("61 * * * *", "61"),
    ("0 0 * * * *", "6 fields"),
    ("CRON_TZ=Mars/Olympus @daily", "Mars/Olympus"),
], ids=["words", "minute-out-of-range", "six-fields", "unknown-zone"])
def test_a_bad_schedule_on_a_storageclass_is_refused_with_key_value_and_reason(
        kube_api: KubeApi, webhook: WebhookProcess, value: str, why: str) -> None:
    sc = f"rbd-{uuid.uuid4().hex[:6]}"
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump(storage_class(sc, None)))
    try:
        proc = kube_api.kubectl("annotate", "sc", sc, f"{SCHEDULE}={value}", check=False)
        assert proc.returncode != 0
        assert 'admission webhook "reclaim-space-validation.kustodian.io" denied the request' in proc.stderr
        assert SCHEDULE in proc.stderr and why in proc.stderr
        # an unrelated update of the same object still goes through
        kube_api.kubectl("label", "sc", sc, "team=storage")
    finally:
        kube_api.kubectl("delete", "storageclass", sc, "--ignore-not-found")


def test_central_configmap_applies_and_a_bad_one_that_slips_in_keeps_the_last_good(
        kube_api: KubeApi, webhook: WebhookProcess, namespace: str) -> None:
    from kustodian.testing.webhooks import webhook_configurations

    sc = f"cm-{uuid.uuid4().hex[:6]}"
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump(storage_class(sc, None)))
    kube_api.kubectl("create", "namespace", "kustodian", check=False)
    # a real API server labels every namespace with its name (the chart's config validator selects
    # on it); kube-testserver does not, so the test does what the API server would
    kube_api.kubectl("label", "namespace", "kustodian", "kubernetes.io/metadata.name=kustodian", "--overwrite")

    def configmap(text: str) -> str:
        return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "kustodian-reclaim-config", "namespace": "kustodian"},
                               "data": {"config.json": text}})

    try:
        kube_api.kubectl("apply", "-f", "-", input=configmap(json.dumps({"auto-reclaim-storageclass": {sc: "@weekly"}})))
        refused = kube_api.kubectl("apply", "-f", "-", input=configmap("{not json"), check=False)
        assert refused.returncode != 0 and "config.json" in refused.stderr

        probes = itertools.count()
        names: list[str] = []

        def configmap_applied() -> bool:  # a new PVC each time: mutated once the webhook's cache has the ConfigMap
            names.append(f"a{next(probes)}")
            kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(pvc(names[-1], namespace, sc)))
            return pvc_annotations(kube_api, namespace, names[-1]).get(SCHEDULE) == "@weekly"

        wait_for(configmap_applied, "the webhook's cache to see the ConfigMap", 15, poll=0.1)
        assert pvc_annotations(kube_api, namespace, names[-1])[SOURCE] == "configmap/kustodian/kustodian-reclaim-config"

        # the validating webhook is down for a moment and a bad config gets in
        kube_api.kubectl("delete", "validatingwebhookconfiguration", "kustodian")
        try:
            kube_api.kubectl("apply", "-f", "-", input=configmap('{"auto-reclaim-storageclass": {"' + sc + '": "sometimes"}}'))
        finally:
            kube_api.kubectl("apply", "-f", "-",
                             input=yaml.safe_dump(webhook_configurations(webhook.url, webhook.ca_bundle())[0]))
        # a new PVC each time until the webhook says (in an Event) that its cache has the bad
        # version; every one of them, the last included, gets the last good config
        after_bad = itertools.count()

        def bad_version_seen() -> bool:
            name = f"after-bad-{next(after_bad)}"
            kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(pvc(name, namespace, sc)))
            assert pvc_annotations(kube_api, namespace, name)[SCHEDULE] == "@weekly"  # last good config
            out = kube_api.kubectl("get", "events", "-n", "kustodian", "--field-selector", "reason=InvalidConfig",
                                   "-o", "jsonpath={.items[*].message}").stdout
            return "sometimes" in out

        wait_for(bad_version_seen, "an InvalidConfig event", 10, poll=0.1)
    finally:
        kube_api.kubectl("delete", "configmap", "kustodian-reclaim-config", "-n", "kustodian", "--ignore-not-found")
        kube_api.kubectl("delete", "storageclass", sc, "--ignore-not-found")
