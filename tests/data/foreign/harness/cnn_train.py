"""A plain PyTorch convolutional network trained on random images, for foreign-trace tests: no
Transformer, no NVTX ranges of its own (the PyTorch labels of nsys, or none, are all a trace of
it has). cuDNN convolutions, batch norm, pooling, SGD with momentum; channels-last under bf16
autocast with --amp."""

import argparse
import time

import torch
from torch import nn


def block(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.MaxPool2d(2))


def network(widths: tuple[int, ...] = (64, 128, 256), classes: int = 100) -> nn.Sequential:
    """Conv-BN-ReLU blocks of these widths on RGB images, then pooling and a linear head."""
    blocks = [block(cin, cout) for cin, cout in zip((3, *widths[:-1]), widths)]
    return nn.Sequential(*blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(widths[-1], classes))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--amp", action="store_true")
    a = p.parse_args()

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    model = network().cuda()
    if a.amp:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(a.batch, 3, a.size, a.size, device="cuda")
    y = torch.randint(0, 100, (a.batch,), device="cuda")
    times = []
    for _ in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.amp):
            loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    print("cnn step ms", [round(t * 1e3, 1) for t in times])


if __name__ == "__main__":
    main()
