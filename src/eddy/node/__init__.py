"""The worker node: app registry and lifecycle, deployment folder, persistence, metrics."""
