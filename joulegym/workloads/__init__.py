"""What runs on the devices (DESIGN.md layer 2): tenants, model catalogs, job traces."""

from joulegym.workloads.inference import InferenceApp, random_mix

__all__ = ["InferenceApp", "random_mix"]
