"""Generate the DREAM model catalog (layer tables) from architecture definitions written in Python.

Run ``python benchmarks/dream_layers.py`` to (re)write ``joulegym/workloads/data/dream/``: one CSV per model
(columns ``name,type,K,C,Y,X,R,S,Yo,Xo``; MAESTRO convention: Y, X = input rows/cols, Yo, Xo = output)
and ``catalog.json`` (source, input, dynamic structure: SkipNet gated blocks, RAPID-RL exits, the
Once-for-all variants and their switch point). ``--check`` only verifies the committed files are current.

No torch: every architecture is restated from its paper / public definition with a tiny shape
tracker (:class:`Net`). Architecture choices that the DREAM paper leaves open follow CM §4.3 and are
listed per model in ``SOURCES`` and in docs/families/dream-cost-model.md. Layers are the
compute layers only (pooling, activations, BN, concat and element-wise adds are free; a residual add is
folded into its block). Depthwise convolutions are typed ``DWCONV`` (XRBench's files list them as
dense CONV).

``CM §x`` / ``CM Ax`` = section x / assumption x of docs/families/dream-cost-model.md (it keeps the numbering
of the family's implementation notes); ``[P §x]`` = the paper.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "joulegym" / "workloads" / "data" / "dream"
HEADER = ("name", "type", "K", "C", "Y", "X", "R", "S", "Yo", "Xo")


@dataclass
class Net:
    """A shape tracker: the current (channels, rows, cols) and the layers emitted so far."""

    name: str
    c: int
    h: int
    w: int
    rows: list[tuple] = field(default_factory=list)

    def _out(self, size: int, k: int, stride: int, pad: str) -> int:
        if pad == "same":
            return math.ceil(size / stride)
        return (size - k) // stride + 1  # valid

    def conv(self, name: str, k_out: int, r: int, stride: int = 1, *, s: int | None = None,
             pad: str = "same", sx: int | None = None) -> Net:
        s = r if s is None else s
        sx = stride if sx is None else sx
        yo, xo = self._out(self.h, r, stride, pad), self._out(self.w, s, sx, pad)
        self.rows.append((name, "CONV", k_out, self.c, self.h, self.w, r, s, yo, xo))
        self.c, self.h, self.w = k_out, yo, xo
        return self

    def dw(self, name: str, r: int, stride: int = 1) -> Net:
        yo, xo = self._out(self.h, r, stride, "same"), self._out(self.w, r, stride, "same")
        self.rows.append((name, "DWCONV", self.c, self.c, self.h, self.w, r, r, yo, xo))
        self.h, self.w = yo, xo
        return self

    def fc(self, name: str, k_out: int, kind: str = "FC") -> Net:
        """A fully connected layer on the flattened current tensor."""
        c_in = self.c * self.h * self.w
        self.rows.append((name, kind, k_out, c_in, 1, 1, 1, 1, 1, 1))
        self.c, self.h, self.w = k_out, 1, 1
        return self

    def lstm(self, name: str, c_in: int, hidden: int) -> Net:
        """One LSTM cell step: an FC with C = input + hidden, K = 4 * hidden (CM §4.4)."""
        self.rows.append((name, "LSTM", 4 * hidden, c_in + hidden, 1, 1, 1, 1, 1, 1))
        self.c, self.h, self.w = hidden, 1, 1
        return self

    def pool(self, k: int, stride: int | None = None, *, kx: int | None = None, sx: int | None = None,
             pad: str = "same") -> Net:
        kx = k if kx is None else kx
        if sx is None:
            sx = kx if stride is None else stride  # a pooling window's default stride is its size
        stride = k if stride is None else stride
        self.h, self.w = self._out(self.h, k, stride, pad), self._out(self.w, kx, sx, pad)
        return self

    def global_pool(self) -> Net:
        self.h = self.w = 1
        return self

    def shape(self) -> tuple[int, int, int]:
        return self.c, self.h, self.w

    def set_shape(self, c: int, h: int, w: int) -> Net:
        self.c, self.h, self.w = c, h, w
        return self


# --------------------------------------------------------------------------------------------------
# Building blocks


def mbconv(net: Net, name: str, expand: int, k: int, c_out: int, stride: int) -> None:
    """Inverted residual (MobileNetV2/FBNet/OFA): 1x1 expand (skipped when expand == 1), kxk DW, 1x1 project."""
    c_in = net.c
    if expand != 1:
        net.conv(f"{name}_pw", c_in * expand, 1)
    net.dw(f"{name}_dw", k, stride)
    net.conv(f"{name}_pwl", c_out, 1)


def basic_block(net: Net, name: str, c_out: int, stride: int) -> None:
    """ResNet basic block: two 3x3 convs, 1x1 projection shortcut when the shape changes."""
    c_in, h, w = net.shape()
    net.conv(f"{name}_conv1", c_out, 3, stride).conv(f"{name}_conv2", c_out, 3)
    if stride != 1 or c_in != c_out:
        out = net.shape()
        net.set_shape(c_in, h, w).conv(f"{name}_proj", c_out, 1, stride)
        net.set_shape(*out)


def bottleneck(net: Net, name: str, width: int, stride: int) -> bool:
    """ResNet bottleneck (1x1, 3x3 stride, 1x1 x4); returns whether it has a projection shortcut."""
    c_in, h, w = net.shape()
    net.conv(f"{name}_conv1", width, 1).conv(f"{name}_conv2", width, 3, stride).conv(f"{name}_conv3", 4 * width, 1)
    if stride != 1 or c_in != 4 * width:
        out = net.shape()
        net.set_shape(c_in, h, w).conv(f"{name}_proj", 4 * width, 1, stride)
        net.set_shape(*out)
        return True
    return False


# --------------------------------------------------------------------------------------------------
# Models (CM §4.3). Each returns (rows, metadata).

FBNET_C_BLOCKS = (  # (expand, kernel, c_out, stride) per block; "skip" blocks are omitted [X: Wu et al. CVPR'19 Fig. 4]
    (1, 3, 16, 1),
    (6, 3, 24, 2), (1, 3, 24, 1), (1, 3, 24, 1),
    (6, 5, 32, 2), (3, 5, 32, 1), (6, 5, 32, 1), (6, 3, 32, 1),
    (6, 5, 64, 2), (3, 5, 64, 1), (6, 5, 64, 1), (6, 5, 64, 1),
    (6, 5, 112, 1), (6, 5, 112, 1), (6, 5, 112, 1), (3, 5, 112, 1),
    (6, 5, 184, 2), (6, 5, 184, 1), (6, 5, 184, 1), (6, 5, 184, 1),
    (6, 3, 352, 1),
)


def fbnet_c(h: int = 160, w: int = 100) -> Net:
    """FBNet-C on the XRBench gaze-estimation input 3x160x100 (XRBench GE_FBNet_C, 63 layers)."""
    net = Net("fbnet-c", 3, h, w)
    net.conv("conv1", 16, 3, 2)
    for i, (e, k, c, s) in enumerate(FBNET_C_BLOCKS):
        mbconv(net, f"b{i}", e, k, c, s)
    net.conv("conv_head", 1984, 1).global_pool().fc("fc", 1000)
    return net


MBV2_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                 (6, 320, 1, 1))  # (t, c, n, s) [X: Sandler et al. CVPR'18 Table 2]


def ssdlite_mobilenetv2(size: int = 300, num_classes: int = 91) -> Net:
    """SSDLite-MobileNetV2 at 300x300 [X: Sandler et al. CVPR'18 §6.2; torchvision/TF-OD SSDLite heads].

    Heads on 6 feature maps (the 576-channel expansion of block 13 at 19x19, the 1280-channel head at
    10x10, then 4 extra blocks 512/256/256/128), each a 3x3 DW + 1x1 conv for classes and for boxes,
    3 anchors on the first map and 6 on the others; COCO's 91 classes [A].
    """
    net = Net("ssd-mobilenetv2", 3, size, size)
    net.conv("conv1", 32, 3, 2)
    feature_maps: list[tuple[int, int, int]] = []
    block = 0
    for t, c, n, s in MBV2_SETTINGS:
        for i in range(n):
            stride = s if i == 0 else 1
            if block == 13:  # the SSDLite 19x19 head taps the expansion of block 13 (before its stride-2 DW)
                c_in = net.c
                net.conv(f"b{block}_pw", c_in * t, 1)
                feature_maps.append(net.shape())
                net.dw(f"b{block}_dw", 3, stride).conv(f"b{block}_pwl", c, 1)
            else:
                mbconv(net, f"b{block}", t, 3, c, stride)
            block += 1
    net.conv("conv_head", 1280, 1)
    feature_maps.append(net.shape())
    for j, (mid, out) in enumerate(((256, 512), (128, 256), (128, 256), (64, 128))):
        net.conv(f"extra{j}_pw", mid, 1).dw(f"extra{j}_dw", 3, 2).conv(f"extra{j}_pwl", out, 1)
        feature_maps.append(net.shape())
    end = net.shape()
    for j, (c, h, w) in enumerate(feature_maps):
        anchors = 3 if j == 0 else 6
        for head, k_out in (("cls", anchors * num_classes), ("box", anchors * 4)):
            net.set_shape(c, h, w).dw(f"head{j}_{head}_dw", 3).conv(f"head{j}_{head}_pw", k_out, 1)
    net.set_shape(*end)
    return net


def handposenet(size: int = 96) -> Net:
    """HandPoseNet stand-in [A, CM §4.3]: ResNet-34-shaped, half width, on a 1x96x96 depth crop; 21x3 joints."""
    net = Net("handposenet", 1, size, size)
    net.conv("conv1", 32, 7, 2)
    for stage, (c, n) in enumerate(((32, 3), (64, 4), (128, 6), (256, 3))):
        for i in range(n):
            basic_block(net, f"s{stage}b{i}", c, 2 if (i == 0 and stage > 0) else 1)
    net.global_pool().fc("fc", 63)
    return net


# Once-for-all MobileNetV3 space (OFA ofa_mbv3_d234_e346_k357_w1.0): 5 stages after the stem with widths
# 24, 40, 80, 112, 160 and strides 2, 2, 2, 1, 2 [X: Cai et al. ICLR'20]. The four s7edge-like variants
# share a resolution so that the stem is common and switching after it is well defined [A, CM §2.4].
OFA_STAGES = ((24, 2), (40, 2), (80, 2), (112, 1), (160, 2))
OFA_RESOLUTION = 160  # one resolution for all four variants (shared stem); 219 M is reachable at 160 [A]
# Per variant: per stage (depth, expand, kernel); searched so that the MACs match OFA S7-Edge 219/145/96 M;
# the lightest is the smallest sub-net of the space (63 M at 160x160, 5 % under the 66 M target).
OFA_VARIANTS = {
    "ofa-219": ((4, 6, 5), (4, 6, 5), (4, 4, 5), (4, 4, 5), (4, 6, 7)),
    "ofa-145": ((3, 6, 3), (3, 4, 5), (3, 4, 5), (3, 4, 5), (3, 6, 5)),
    "ofa-96": ((3, 4, 5), (2, 4, 5), (3, 3, 3), (2, 4, 3), (2, 3, 5)),
    "ofa-66": ((2, 3, 3), (2, 3, 3), (2, 3, 3), (2, 3, 3), (2, 3, 3)),
}
OFA_STEM_LAYERS = 3  # conv1 + the first MBConv (k3, e1: DW + project): the switch point (CM §2.4)


def ofa(variant: str) -> Net:
    config = OFA_VARIANTS[variant]
    net = Net(variant, 3, OFA_RESOLUTION, OFA_RESOLUTION)
    net.conv("conv1", 16, 3, 2)
    mbconv(net, "stem_mb", 1, 3, 16, 1)
    for stage, ((c, s), (depth, e, k)) in enumerate(zip(OFA_STAGES, config, strict=True)):
        for i in range(depth):
            mbconv(net, f"s{stage}b{i}", e, k, c, s if i == 0 else 1)
    net.conv("final_expand", 960, 1).global_pool().conv("feature_mix", 1280, 1).fc("classifier", 1000)
    return net


def res8(width: int = 45, frames: int = 101, mfcc: int = 40, classes: int = 12) -> Net:
    """res8 keyword spotting [X: Tang & Lin ICASSP'18]: 3x3 conv, 4x3 average pool, 3 residual blocks
    of two 3x3 convs, global average pool, FC. ``width=19`` is res8-narrow (XRBench KD_res8_narrow)."""
    net = Net("kws-res8", 1, frames, mfcc)
    net.conv("conv0", width, 3).pool(4, kx=3, pad="valid")
    for i in range(6):
        net.conv(f"conv{i + 1}", width, 3)
    net.global_pool().fc("fc", classes)
    return net


def gnmt(hidden: int = 1024, vocab: int = 32000) -> Net:
    """GNMT, one decode step per frame [X: Wu et al. 2016; CM §4.3]: 8 encoder + 8 decoder LSTM cell
    steps (decoder cells also take the 1024-d attention context), the attention query projection and the
    32K-vocabulary softmax projection (weights re-streamed from DRAM every step: memory-bound)."""
    net = Net("gnmt", hidden, 1, 1)
    for i in range(8):
        net.lstm(f"enc{i}", hidden, hidden)
    net.fc("attention", hidden)
    for i in range(8):
        net.lstm(f"dec{i}", 2 * hidden, hidden)
    net.fc("softmax", vocab)
    return net


def skipnet(size: int = 224) -> tuple[Net, list[tuple[int, int]]]:
    """SkipNet on ResNet-101 [X: Wang et al. ECCV'18]: every residual block except the first of each
    stage is gated (skipped with probability p_skip); gate cost ignored (CM §4.2)."""
    net = Net("skipnet", 3, size, size)
    net.conv("conv1", 64, 7, 2).pool(3, 2)
    gated: list[tuple[int, int]] = []
    for stage, (width, n) in enumerate(((64, 3), (128, 4), (256, 23), (512, 3))):
        for i in range(n):
            start = len(net.rows)
            bottleneck(net, f"s{stage}b{i}", width, 2 if (i == 0 and stage > 0) else 1)
            if i > 0:
                gated.append((start, len(net.rows)))
    net.global_pool().fc("fc", 1000)
    return net, gated


def trailnet(h: int = 180, w: int = 320) -> Net:
    """TrailNet s-ResNet-18 on 320x180 RGB [X: Smolyanskiy et al. IROS'17]: ResNet-18 shapes, 6 outputs
    (3 orientation + 3 lateral-offset classes)."""
    net = Net("trailnet", 3, h, w)
    net.conv("conv1", 64, 7, 2).pool(3, 2)
    for stage, c in enumerate((64, 128, 256, 512)):
        for i in range(2):
            basic_block(net, f"s{stage}b{i}", c, 2 if (i == 0 and stage > 0) else 1)
    net.global_pool().fc("fc", 6)
    return net


def sosnet(patches: int = 16) -> Net:
    """SOSNet = L2-Net shapes on 32x32 grayscale patches [X: Tian et al. CVPR'19/'17]; ``patches`` patches
    per frame are batched along X (cost-equivalent for both dataflows) [A, CM §4.3]."""
    net = Net("sosnet", 1, 32, 32 * patches)
    for name, k, stride in (("conv1", 32, 1), ("conv2", 32, 1), ("conv3", 64, 2), ("conv4", 64, 1),
                            ("conv5", 128, 2), ("conv6", 128, 1)):
        net.conv(name, k, 3, stride)
    net.conv("conv7", 128, 8, 8, pad="valid")  # 8x8 valid conv per patch -> one 128-d descriptor
    return net


def rapid_rl() -> tuple[Net, list[int]]:
    """RAPID-RL stand-in [A, CM §4.3]: 5 conv + 2 FC on 3x84x84 with preemptive exits after conv3 and conv4
    (exit heads are a small FC each, cost ignored)."""
    net = Net("rapid-rl", 3, 84, 84)
    net.conv("conv1", 64, 8, 4, pad="valid").conv("conv2", 128, 4, 2, pad="valid")
    net.conv("conv3", 128, 3).conv("conv4", 128, 3).conv("conv5", 128, 3)
    net.fc("fc1", 512).fc("fc2", 6)
    return net, [2, 3]


GOOGLENET_INCEPTIONS = (  # name, 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj [X: Szegedy et al. CVPR'15 Table 1]
    ("3a", 64, 96, 128, 16, 32, 32), ("3b", 128, 128, 192, 32, 96, 64), "pool",
    ("4a", 192, 96, 208, 16, 48, 64), ("4b", 160, 112, 224, 24, 64, 64), ("4c", 128, 128, 256, 24, 64, 64),
    ("4d", 112, 144, 288, 32, 64, 64), ("4e", 256, 160, 320, 32, 128, 128), "pool",
    ("5a", 256, 160, 320, 32, 128, 128), ("5b", 384, 192, 384, 48, 128, 128),
)


def googlenet_car(size: int = 224, classes: int = 196) -> Net:
    """GoogLeNet (Inception v1) for car classification: 57 convs + FC to 196 car models [A: Stanford Cars]."""
    net = Net("googlenet-car", 3, size, size)
    net.conv("conv1", 64, 7, 2).pool(3, 2).conv("conv2_reduce", 64, 1).conv("conv2", 192, 3).pool(3, 2)
    for spec in GOOGLENET_INCEPTIONS:
        if spec == "pool":
            net.pool(3, 2)
            continue
        name, b1, r3, b3, r5, b5, pp = spec
        c_in, h, w = net.shape()
        net.conv(f"{name}_1x1", b1, 1)
        net.set_shape(c_in, h, w).conv(f"{name}_3x3_reduce", r3, 1).conv(f"{name}_3x3", b3, 3)
        net.set_shape(c_in, h, w).conv(f"{name}_5x5_reduce", r5, 1).conv(f"{name}_5x5", b5, 5)
        net.set_shape(c_in, h, w).conv(f"{name}_pool_proj", pp, 1)
        net.set_shape(b1 + b3 + b5 + pp, h, w)
    net.global_pool().fc("fc", classes)
    return net


def focal_length_depth(h: int = 228, w: int = 304) -> Net:
    """Depth with focal-length embedding stand-in [A, CM §4.3: He et al. TIP'18]: VGG-16 encoder at 228x304,
    a focal-length embedding FC, and a 4-conv upsampling decoder to a 1/4-resolution depth map."""
    net = Net("focal-length-depth", 3, h, w)
    for stage, (c, n) in enumerate(((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))):
        for i in range(n):
            net.conv(f"conv{stage + 1}_{i + 1}", c, 3)
        net.pool(2, 2)
    end = net.shape()
    net.set_shape(1, 1, 1).fc("focal_embed", 64)  # focal length -> 64-d embedding, tiled on the features
    net.set_shape(end[0] + 64, end[1], end[2])
    for i, c in enumerate((256, 128, 64)):
        c_in, hh, ww = net.shape()
        net.set_shape(c_in, hh * 2, ww * 2).conv(f"up{i + 1}", c, 3)
    net.conv("depth", 1, 3)
    return net


def ed_tcn(steps: int = 668, features: int = 128) -> Net:
    """ED-TCN action segmentation [X: Lea et al. CVPR'17; XRBench AS_ED_TCN]: two encoder temporal convs
    (kernel 25, 64/96 filters, max-pool 2), two decoder temporal convs (upsample 2); per-frame classifier
    omitted as in XRBench (4 layers)."""
    net = Net("ed-tcn", features, steps, 1)
    net.conv("enc1", 64, 25, s=1).pool(2, kx=1).conv("enc2", 96, 25, s=1).pool(2, kx=1)
    c, h, w = net.shape()
    net.set_shape(c, h * 2, w).conv("dec1", 96, 25, s=1)
    c, h, w = net.shape()
    net.set_shape(c, h * 2, w).conv("dec2", 64, 25, s=1)
    return net


def vgg_voxceleb(h: int = 512, w: int = 300, speakers: int = 1251) -> Net:
    """VGG-M speaker verification on a 512x300 spectrogram [X: Nagrani et al. Interspeech'17 Table 4]."""
    net = Net("vgg-voxceleb", 1, h, w)
    net.conv("conv1", 96, 7, 2, pad="valid").pool(3, 2, pad="valid")
    net.conv("conv2", 256, 5, 2, pad="valid").pool(3, 2, pad="valid")
    net.conv("conv3", 384, 3).conv("conv4", 256, 3).conv("conv5", 256, 3)
    net.pool(5, 3, kx=3, sx=2, pad="valid")
    net.conv("fc6", 4096, 9, 1, s=1, pad="valid")  # 9x1 conv over frequency, then average over time
    net.global_pool().fc("fc7", 1024).fc("fc8", speakers)
    return net


SOURCES = {
    "fbnet-c": "FBNet-C (Wu et al. CVPR'19), 3x160x100 gaze input as XRBench GE_FBNet_C",
    "ssd-mobilenetv2": "SSDLite-MobileNetV2 (Sandler et al. CVPR'18 §6.2), 300x300, 91 classes",
    "handposenet": "[A] ResNet-34-shaped half-width CNN on a 1x96x96 depth crop (CM §4.3; shapes unpublished)",
    "ofa-219": "Once-for-all MobileNetV3 space (Cai et al. ICLR'20) at 160x160, variant tuned to OFA s7edge 219 MMACs",
    "ofa-145": "Once-for-all MobileNetV3 space, variant tuned to OFA s7edge 145 MMACs",
    "ofa-96": "Once-for-all MobileNetV3 space, variant tuned to OFA s7edge 96 MMACs",
    "ofa-66": "Once-for-all MobileNetV3 space, smallest sub-net (63 MMACs at 160; OFA s7edge 66 MMACs)",
    "kws-res8": "res8 (Tang & Lin ICASSP'18), 45 maps, 101x40 MFCC",
    "gnmt": "GNMT (Wu et al. 2016), one decode step: 8 enc + 8 dec LSTM cells (1024), attention, 32K softmax",
    "skipnet": "SkipNet (Wang et al. ECCV'18) on ResNet-101, 224x224, 29 gated blocks",
    "trailnet": "TrailNet s-ResNet-18 (Smolyanskiy et al. IROS'17), 320x180",
    "sosnet": "SOSNet / L2-Net shapes (Tian et al. CVPR'19), 16 patches of 32x32 per frame",
    "rapid-rl": "[A] RAPID-RL stand-in: 5 conv + 2 FC on 84x84, exits after conv3 and conv4 (CM §4.2/§4.3)",
    "googlenet-car": "GoogLeNet / Inception v1 (Szegedy et al. CVPR'15), 224x224, 196 car classes",
    "focal-length-depth": "[A] VGG-16 encoder + focal-length embedding + upsampling decoder (He et al. TIP'18) 228x304",
    "ed-tcn": "ED-TCN (Lea et al. CVPR'17), 668 steps x 128 features as XRBench AS_ED_TCN",
    "vgg-voxceleb": "VGG-M (Nagrani et al. Interspeech'17), 512x300 spectrogram, 1251 speakers",
}


def build_catalog() -> tuple[dict[str, list[tuple]], dict]:
    """All models' layer rows and the catalog metadata (dynamic structure as data)."""
    models: dict[str, Net] = {
        "fbnet-c": fbnet_c(),
        "ssd-mobilenetv2": ssdlite_mobilenetv2(),
        "handposenet": handposenet(),
        **{name: ofa(name) for name in OFA_VARIANTS},
        "kws-res8": res8(),
        "gnmt": gnmt(),
    }
    skip_net, gated = skipnet()
    models["skipnet"] = skip_net
    models["trailnet"] = trailnet()
    models["sosnet"] = sosnet()
    rapid, exits = rapid_rl()
    models["rapid-rl"] = rapid
    models["googlenet-car"] = googlenet_car()
    models["focal-length-depth"] = focal_length_depth()
    models["ed-tcn"] = ed_tcn()
    models["vgg-voxceleb"] = vgg_voxceleb()
    stems = {tuple(models[v].rows[:OFA_STEM_LAYERS]) for v in OFA_VARIANTS}
    assert len(stems) == 1, "OFA variants must share the stem up to the switch point"
    meta = {
        "format": "one CSV per model, columns " + ",".join(HEADER) + " (Y, X input; Yo, Xo output; int8)",
        "generator": "benchmarks/dream_layers.py",
        "models": {name: {"file": f"{name}.csv", "source": SOURCES[name]} for name in models},
        "skip_blocks": {"skipnet": [list(b) for b in gated]},
        "exits": {"rapid-rl": exits},
        "supernets": {"ofa": {"variants": list(OFA_VARIANTS), "switch_point": OFA_STEM_LAYERS}},
    }
    return {name: net.rows for name, net in models.items()}, meta


def render(rows: list[tuple]) -> str:
    lines = [",".join(HEADER)] + [",".join(str(v) for v in row) for row in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the committed files are current")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    tables, meta = build_catalog()
    files = {f"{name}.csv": render(rows) for name, rows in tables.items()}
    files["catalog.json"] = json.dumps(meta, indent=1) + "\n"
    stale = [name for name, text in files.items()
             if not (args.out / name).is_file() or (args.out / name).read_text() != text]
    if args.check:
        for name in stale:
            print(f"stale: {args.out / name}")
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / name).write_text(text)
    print(f"wrote {len(files)} files to {args.out} ({len(stale)} changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
