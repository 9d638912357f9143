"""What runs on the devices (docs/architecture.md): tenants, model catalogs, job traces."""

from joulegym.workloads.inference import InferenceApp, random_mix

__all__ = ["InferenceApp", "random_mix"]
