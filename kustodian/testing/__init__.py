"""Real-API test tier: a throwaway Kubernetes API server and the kubectl/helm binaries.

Used by the test suite's fixtures and by ``make demo``.  Nothing here is a fake:
it starts ``../shared/kube-testserver`` (k8s.io/apiserver + etcd) on free ports.
"""
