"""Sections and outputs recorded outside the timed steps: the per-module breakdown, Python
hotspots, model and data facts, NVTX ranges for Nsight Systems, the TensorBoard copy.
"""
