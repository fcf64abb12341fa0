"""Node-loss cleanup of local PVs and PVCs (sig-storage-local-static-provisioner's node cleanup)."""
