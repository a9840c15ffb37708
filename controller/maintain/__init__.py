"""Plane-aware rolling maintenance (`dpctl maintain`): waves, their predicted impact, the
per-switch steps, and the rollout's resumable state. docs/maintain.md."""
