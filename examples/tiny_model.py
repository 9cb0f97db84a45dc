"""A small CNN for `sweep profile measure examples/tiny_model.py:model_and_batch` (and the test trace)."""

import torch
from torch import nn


def model_and_batch():
    """(model, (inputs, target)): a conv, batch norm and two linear layers on 8 images of 3x32x32."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(),
        nn.Linear(256, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    )
    return model, (torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,)))
