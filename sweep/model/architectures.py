"""Parameter tensors and backward work of torchvision ResNet-50/101 and VGG-16-BN.

Each architecture is a list of :class:`Layer` in PyTorch's parameter order
(``model.named_parameters()``), for a 3x224x224 input. A layer carries its
parameter tensors and the work of its backward pass for one image:

- ``macs``: multiply-accumulates of the forward op; backward does about twice that
  (input gradient + weight gradient), or once for the first conv, whose input
  needs no gradient.
- ``act_bytes``: fp32 bytes of the layer's output activation; backward of the
  memory-bound ops (batch norm with its ReLU, residual add, pooling) moves a few
  multiples of that.

No torch needed: the shapes follow torchvision's definitions (ResNet v1.5, the
stride on the 3x3 conv; VGG ``cfg D`` with batch norm).
"""

import dataclasses
from collections.abc import Sequence

FP32 = 4


@dataclasses.dataclass(frozen=True)
class Layer:
    """One module with parameters.

    Attributes:
      kind: ``conv``, ``bn`` or ``linear``.
      params: ((name, shape), ...) in PyTorch parameter order.
      macs: forward multiply-accumulates per image.
      act_bytes: output activation bytes per image (fp32).
      first: True for the network's first conv (no input gradient).
    """

    kind: str
    params: tuple[tuple[str, tuple[int, ...]], ...]
    macs: float
    act_bytes: float
    first: bool = False


def _conv(name, cin, cout, k, hout, bias=False, first=False):
    params: tuple[tuple[str, tuple[int, ...]], ...] = ((f"{name}.weight", (cout, cin, k, k)),)
    if bias:
        params += ((f"{name}.bias", (cout,)),)
    return Layer("conv", params, cout * cin * k * k * hout * hout, cout * hout * hout * FP32, first)


def _bn(name, c, h):
    return Layer("bn", ((f"{name}.weight", (c,)), (f"{name}.bias", (c,))), 0.0, c * h * h * FP32)


def _linear(name, cin, cout):
    return Layer(
        "linear", ((f"{name}.weight", (cout, cin)), (f"{name}.bias", (cout,))), cin * cout, cout * FP32
    )


def resnet(blocks_per_stage: Sequence[int]) -> list[Layer]:
    """torchvision ResNet with Bottleneck blocks, e.g. (3, 4, 6, 3) for ResNet-50."""
    layers = [_conv("conv1", 3, 64, 7, 112, first=True), _bn("bn1", 64, 112)]
    cin, h = 64, 56  # after the stride-2 max pool
    for stage, (nblocks, planes) in enumerate(zip(blocks_per_stage, (64, 128, 256, 512))):
        for b in range(nblocks):
            stride = 2 if (b == 0 and stage > 0) else 1
            hout = h // stride
            p = f"layer{stage + 1}.{b}"
            layers += [
                _conv(f"{p}.conv1", cin, planes, 1, h),
                _bn(f"{p}.bn1", planes, h),
                _conv(f"{p}.conv2", planes, planes, 3, hout),
                _bn(f"{p}.bn2", planes, hout),
                _conv(f"{p}.conv3", planes, 4 * planes, 1, hout),
                _bn(f"{p}.bn3", 4 * planes, hout),
            ]
            if b == 0:
                layers += [
                    _conv(f"{p}.downsample.0", cin, 4 * planes, 1, hout),
                    _bn(f"{p}.downsample.1", 4 * planes, hout),
                ]
            cin, h = 4 * planes, hout
    layers.append(_linear("fc", 2048, 1000))
    return layers


def vgg16_bn() -> list[Layer]:
    """torchvision vgg16_bn: 13 conv+BN layers (cfg D) and a 3-layer classifier."""
    cfg: list[int | str] = [
        64,
        64,
        "M",
        128,
        128,
        "M",
        256,
        256,
        256,
        "M",
        512,
        512,
        512,
        "M",
        512,
        512,
        512,
        "M",
    ]
    layers, cin, h, idx = [], 3, 224, 0
    for v in cfg:
        if not isinstance(v, int):  # "M": max pool
            h //= 2
            idx += 1
            continue
        layers += [
            _conv(f"features.{idx}", cin, v, 3, h, bias=True, first=(cin == 3)),
            _bn(f"features.{idx + 1}", v, h),
        ]
        cin, idx = v, idx + 3  # conv, bn, relu
    layers += [
        _linear("classifier.0", 512 * 7 * 7, 4096),
        _linear("classifier.3", 4096, 4096),
        _linear("classifier.6", 4096, 1000),
    ]
    return layers


ARCHITECTURES = {
    "resnet50": lambda: resnet((3, 4, 6, 3)),
    "resnet101": lambda: resnet((3, 4, 23, 3)),
    "vgg16": vgg16_bn,
}
