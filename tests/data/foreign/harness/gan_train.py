"""A small DCGAN-style training loop (random data), for foreign-trace tests: two models and two
optimizers, so each iteration holds two forward/backward/optimizer sequences.

Ranges of its own (with --nvtx): ``iteration_<i>`` (warm-up included), and inside it
``D_step`` (``D_forward``: the discriminator on real and generated images and its loss,
``D_backward``, ``D_optimizer``) then ``G_step`` (``G_forward``: the generator and the
discriminator on its images, ``G_backward``, ``G_optimizer``).
"""

import argparse
import contextlib
import time

import torch
from torch import nn


def generator(z: int, width: int) -> nn.Module:
    return nn.Sequential(
        nn.ConvTranspose2d(z, width * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(width * 4), nn.ReLU(True),
        nn.ConvTranspose2d(width * 4, width * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(width * 2), nn.ReLU(True),
        nn.ConvTranspose2d(width * 2, width, 4, 2, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(True),
        nn.ConvTranspose2d(width, 3, 4, 2, 1, bias=False), nn.Tanh(),
    )


def discriminator(width: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, width, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, True),
        nn.Conv2d(width, width * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(width * 2), nn.LeakyReLU(0.2, True),
        nn.Conv2d(width * 2, width * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(width * 4), nn.LeakyReLU(0.2, True),
        nn.Conv2d(width * 4, 1, 4, 1, 0, bias=False), nn.Flatten(),
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--z", type=int, default=100)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--nvtx", action="store_true")
    a = p.parse_args()

    dev = torch.device("cuda")
    torch.manual_seed(0)
    g, d = generator(a.z, a.width).to(dev), discriminator(a.width).to(dev)
    opt_g = torch.optim.Adam(g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    real = torch.rand(a.batch, 3, 32, 32, device=dev) * 2 - 1
    ones, zeros = torch.ones(a.batch, 1, device=dev), torch.zeros(a.batch, 1, device=dev)

    def rng(name):
        return torch.cuda.nvtx.range(name) if a.nvtx else contextlib.nullcontext()

    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        with rng(f"iteration_{i}"):
            noise = torch.randn(a.batch, a.z, 1, 1, device=dev)
            with rng("D_step"):
                opt_d.zero_grad(set_to_none=True)
                with rng("D_forward"):
                    fake = g(noise)
                    loss_d = bce(d(real), ones) + bce(d(fake.detach()), zeros)
                with rng("D_backward"):
                    loss_d.backward()
                with rng("D_optimizer"):
                    opt_d.step()
            with rng("G_step"):
                opt_g.zero_grad(set_to_none=True)
                with rng("G_forward"):
                    loss_g = bce(d(fake), ones)
                with rng("G_backward"):
                    loss_g.backward()
                with rng("G_optimizer"):
                    opt_g.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    print("step ms", [round(t * 1e3, 1) for t in times])


if __name__ == "__main__":
    main()
