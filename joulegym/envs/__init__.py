"""Simulators and Gymnasium shells, one subpackage per family (docs/architecture.md).

Families are imported lazily by their entry points; importing this package imports no family.
"""
