"""The device side of a capture: which torch device and how to time a step on it, the GPU's
abilities for a precision, torch version guards, peak memory, FLOPs and the MFU peak, and
the environment (driver, torch, git) a capture ran in.
"""
