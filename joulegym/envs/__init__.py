"""Simulators and Gymnasium shells, one subpackage per family (DESIGN.md layers 3-4).

Families are imported lazily by their entry points; importing this package imports no family.
"""
