# What `portlint check --fix --unsafe-fixes` makes of `dist.init_process_group("nccl", ...)` (PORT406),
# written by portlint; run by port406_backends.py.
import torch
import torch.distributed as dist


def init(store):
    dist.init_process_group(
        torch.distributed.get_default_backend_for_device(
            torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"
        ),
        store=store,
        rank=0,
        world_size=1,
    )
    return dist.get_backend()
