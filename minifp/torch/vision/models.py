"""`torchvision.models`: resnet18 and mobilenet_v2 with torchvision's architecture, module names and state_dict
keys, built from `minifp.torch.nn`. Pretrained weights are never downloaded: `weights` must be None; a
state_dict saved from torchvision with safetensors loads with `model.load_state_dict(minifp.torch.load(path))`.
"""
from __future__ import annotations

from .. import nn

__all__ = ["BasicBlock", "InvertedResidual", "MobileNetV2", "ResNet", "mobilenet_v2", "resnet18"]


def _no_weights(fn, weights, kwargs):
    """Refuse pretrained weights (minifp downloads none), before anything is built."""
    pretrained = kwargs.pop("pretrained", False)
    if weights is None and not pretrained:
        return
    given = f"weights={weights!r}" if weights is not None else f"pretrained={pretrained!r}"
    raise ValueError(f"{fn}(): {given}: minifp does not download pretrained weights; use weights=None, then load "
                     f"a state_dict saved from torchvision with safetensors: "
                     f"model.load_state_dict(minifp.torch.load(path))")


# -- ResNet ------------------------------------------------------------------------------------


def _conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


def _conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm, and the input (downsampled where the shape changes) added back."""

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision's ResNet (BasicBlock variants): stem, four stages, global average pool, fc."""

    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1, width_per_group=64,
                 replace_stride_with_dilation=None, norm_layer=None):
        super().__init__()
        if replace_stride_with_dilation not in (None, [False, False, False], (False, False, False)):
            raise ValueError(f"replace_stride_with_dilation={replace_stride_with_dilation!r}: minifp's ResNet has "
                             f"BasicBlock only, which supports no dilation; use None")
        self._norm_layer = norm_layer or nn.BatchNorm2d
        self.inplanes, self.dilation, self.groups, self.base_width = 64, 1, groups, width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)      # keeps Linear's default initialisation
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(_conv1x1(self.inplanes, planes * block.expansion, stride),
                                       self._norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, self.dilation,
                        self._norm_layer)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                         dilation=self.dilation, norm_layer=self._norm_layer) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = self.avgpool(x).flatten(1)
        return self.fc(x)


def resnet18(*, weights=None, progress=True, **kwargs):
    """ResNet-18 (BasicBlock, [2, 2, 2, 2]) as torchvision builds it; weights must be None."""
    _no_weights("resnet18", weights, kwargs)
    return ResNet(BasicBlock, [2, 2, 2, 2], **kwargs)


# -- MobileNetV2 -------------------------------------------------------------------------------


def _make_divisible(v, divisor, min_value=None):
    """v rounded to a multiple of divisor, never below min_value (divisor) nor more than 10% below v."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class Conv2dNormActivation(nn.Sequential):
    """Conv2d (no bias when normalised), norm layer, activation: indices 0, 1, 2 as torchvision's."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1, norm_layer=None,
                 activation_layer=None, dilation=1):
        padding = (kernel_size - 1) // 2 * dilation if padding is None else padding
        norm_layer = norm_layer or nn.BatchNorm2d
        activation_layer = activation_layer or nn.ReLU
        super().__init__(nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                                   groups=groups, bias=False),
                         norm_layer(out_channels), activation_layer(inplace=True))
        self.out_channels = out_channels


class InvertedResidual(nn.Module):
    """Expand (1x1), depthwise 3x3, project (1x1, linear); the input added back when the shapes allow."""

    def __init__(self, inp, oup, stride, expand_ratio, norm_layer=None):
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        norm_layer = norm_layer or nn.BatchNorm2d
        self.stride = stride
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden_dim, kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=nn.ReLU6))
        layers += [Conv2dNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim,
                                        norm_layer=norm_layer, activation_layer=nn.ReLU6),
                   nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
                   norm_layer(oup)]
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


_SETTINGS = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
             [6, 320, 1, 1]]      # t (expansion), c (channels), n (blocks), s (first block's stride)


class MobileNetV2(nn.Module):
    """torchvision's MobileNetV2: features (stem, 17 inverted residuals, 1x1 to 1280), pool, classifier."""

    def __init__(self, num_classes=1000, width_mult=1.0, inverted_residual_setting=None, round_nearest=8,
                 block=None, norm_layer=None, dropout=0.2):
        super().__init__()
        block = block or InvertedResidual
        norm_layer = norm_layer or nn.BatchNorm2d
        settings = _SETTINGS if inverted_residual_setting is None else inverted_residual_setting
        if len(settings) == 0 or len(settings[0]) != 4:
            raise ValueError(f"inverted_residual_setting should be non-empty or a 4-element list, got {settings}")
        input_channel = _make_divisible(32 * width_mult, round_nearest)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult), round_nearest)
        features = [Conv2dNormActivation(3, input_channel, stride=2, norm_layer=norm_layer,
                                         activation_layer=nn.ReLU6)]
        for t, c, n, s in settings:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(block(input_channel, output_channel, s if i == 0 else 1, expand_ratio=t,
                                      norm_layer=norm_layer))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1, norm_layer=norm_layer,
                                             activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(x.flatten(1))


def mobilenet_v2(*, weights=None, progress=True, **kwargs):
    """MobileNetV2 as torchvision builds it (num_classes=, width_mult=, dropout=, ...); weights must be None."""
    _no_weights("mobilenet_v2", weights, kwargs)
    return MobileNetV2(**kwargs)
