"""yoloprof: where does a PyTorch training step or inference call spend its time?"""

__version__ = "0.1.0"
