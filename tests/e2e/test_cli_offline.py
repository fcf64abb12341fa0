"""CLI behaviours that need no cluster: explain-delete --from DIR, bad rules refused at start."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.e2e.conftest import kustodian


def test_explain_delete_from_a_directory_of_manifests(tmp_path: Path) -> None:
    docs = [
        {"apiVersion": "ceph.rook.io/v1", "kind": "CephFilesystem", "metadata": {"name": "myfs", "namespace": "rook-ceph"},
         "spec": {"dataPools": [{"name": "replicated"}]}},
        {"apiVersion": "ceph.rook.io/v1", "kind": "CephNFS", "metadata": {"name": "nfs-x", "namespace": "rook-ceph"},
         "spec": {"rados": {"pool": "myfs-replicated"}}},
        {"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-fs-1"},
             "spec": {"csi": {"driver": "rook-ceph.cephfs.csi.ceph.com", "volumeHandle": "h",
                              "volumeAttributes": {"clusterID": "rook-ceph", "fsName": "myfs"}}}}]},
    ]
    (tmp_path / "sub").mkdir()
    (tmp_path / "fs.yaml").write_text(yaml.safe_dump_all(docs[:2]))
    (tmp_path / "sub" / "pvs.yaml").write_text(yaml.safe_dump(docs[2]))
    proc = kustodian("explain-delete", "CephFilesystem", "myfs", "-n", "rook-ceph", "--from", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith('CephFilesystem "rook-ceph/myfs" cannot be deleted: it has dependents:')
    table = [line.split() for line in lines[2:]]
    assert table[0] == ["KIND", "NAMESPACE", "NAME"]
    assert ["CephNFS", "rook-ceph", "nfs-x"] in table and ["PersistentVolume", "pv-fs-1"] in table
    # kinds a rule reads that the manifests do not have are named, not silently skipped
    note = next(line for line in lines if line.startswith("note: not in the manifests, so not checked: "))
    assert "StorageClass.storage.k8s.io" in note and "CephNFS" not in note and "PersistentVolume," not in note

    free = kustodian("explain-delete", "CephNFS", "nfs-x", "-n", "rook-ceph", "--from", str(tmp_path))
    assert free.returncode == 0 and "no dependents" in free.stdout
    missing = kustodian("explain-delete", "CephFilesystem", "nope", "-n", "rook-ceph", "--from", str(tmp_path))
    assert missing.returncode == 3 and "not found" in missing.stderr  # 3: not found, apart from 1: blocked


def test_bad_deletion_rules_stop_the_webhook_at_start_with_every_problem(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump([
        {"provider": "StorageClass.storage.k8s.io", "dependent": "PersistentVolumeClaim",
         "match": {"type": "field-ref"}},
        {"provider": "StorageClass.storage.k8s.io", "match": {"type": "no-such-matcher"}},
    ]))
    proc = kustodian("webhook", "--webhook-insecure-http", "--deletion-guard-rules-file", str(rules),
                     "--kube-api-endpoint", "https://127.0.0.1:1")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "rules.yaml[0]" in proc.stderr and "rules.yaml[1]" in proc.stderr
