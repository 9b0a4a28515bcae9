"""octasim.mixed_precision: the mixed-precision training guide's dynamic loss scaling and FP32
master weights for PyTorch (re-exported by octasim.torch; needs Debian's python3-torch)."""

import torch

from . import Error

__all__ = ["DynamicLossScaler", "MasterWeights"]

class DynamicLossScaler:
    """Dynamic loss scaling as the mixed-precision training guide describes it: multiply the
    loss by S before backward; before the update, divide the gradients by S and look for Inf/NaN;
    on an overflow skip the update and multiply S by `backoff` (0.5); after `growth_interval`
    (N) clean steps in a row multiply S by `growth` (2).

        scaler = DynamicLossScaler()
        scaler.scale(loss).backward()
        scaler.step(optimizer)          # False when the step was skipped

    With an FP16 model: masters = MasterWeights(model.parameters()), the optimizer built over
    masters.masters, and scaler.step(optimizer, masters).
    """

    def __init__(self, init_scale=2.0 ** 16, growth=2.0, backoff=0.5, growth_interval=2000,
                 min_scale=2.0 ** -24, max_scale=2.0 ** 24):
        if not init_scale > 0 or not growth > 1 or not 0 < backoff < 1 or growth_interval < 1:
            raise Error("DynamicLossScaler: expected init_scale > 0, growth > 1, "
                        "0 < backoff < 1 and growth_interval >= 1")
        self.scale_factor = float(init_scale)
        self.growth, self.backoff = float(growth), float(backoff)
        self.growth_interval = int(growth_interval)
        self.min_scale, self.max_scale = float(min_scale), float(max_scale)
        self.clean_steps = 0
        self.skipped = 0

    def scale(self, loss):
        """loss * S."""
        return loss * self.scale_factor

    def unscale_(self, params):
        """Divides every gradient by S in place; True when all of them are finite."""
        finite = True
        inv = 1.0 / self.scale_factor
        for p in params:
            if p.grad is None:
                continue
            p.grad.mul_(inv)
            finite = finite and bool(torch.isfinite(p.grad).all())
        return finite

    def update(self, overflow):
        """The scale's bookkeeping after a step: halve on an overflow, grow after N clean."""
        if overflow:
            self.scale_factor = max(self.min_scale, self.scale_factor * self.backoff)
            self.clean_steps = 0
            self.skipped += 1
        else:
            self.clean_steps += 1
            if self.clean_steps >= self.growth_interval:
                self.scale_factor = min(self.max_scale, self.scale_factor * self.growth)
                self.clean_steps = 0

    def step(self, optimizer, master_weights=None):
        """Unscales the gradients, then either skips the update (an overflow: the gradients are
        zeroed) or calls optimizer.step(). With master_weights (a MasterWeights whose masters the
        optimizer updates), the model's low-precision gradients are first copied to the FP32
        masters, unscaled there (an FP16 gradient divided by S could underflow), and the
        updated masters are copied back into the model. Returns True when the optimizer
        stepped."""
        if master_weights is not None:
            master_weights.copy_grads()
            params = master_weights.masters
        else:
            params = [p for g in optimizer.param_groups for p in g["params"]]
        finite = self.unscale_(params)
        if finite:
            optimizer.step()
            if master_weights is not None:
                master_weights.copy_back()
        else:
            for p in list(params) + (master_weights.params if master_weights else []):
                if p.grad is not None:
                    p.grad.zero_()
        self.update(not finite)
        return finite

    def state_dict(self):
        return {"scale": self.scale_factor, "clean_steps": self.clean_steps,
                "skipped": self.skipped}


class MasterWeights:
    """FP32 master copies of a low-precision (FP16) model's parameters: the optimizer updates
    the masters (`masters`); copy_grads() moves the model's gradients to them (in FP32) and
    copy_back() writes the updated masters into the model after each step."""

    def __init__(self, params):
        self.params = [p for p in params if p.requires_grad]
        self.masters = [p.detach().float().clone().requires_grad_(True) for p in self.params]

    def copy_grads(self):
        for p, m in zip(self.params, self.masters):
            m.grad = None if p.grad is None else p.grad.detach().float()

    @torch.no_grad()
    def copy_back(self):
        for p, m in zip(self.params, self.masters):
            p.copy_(m.to(p.dtype))
