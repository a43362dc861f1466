"""Run PORT406's fixed `init_process_group` (port406_fixed_init.py) and print what it received.

    python reference_impl/evidence/port406_backends.py            # as the machine is
    CUDA_VISIBLE_DEVICES= python reference_impl/evidence/port406_backends.py   # a GPU hidden

One line: torch's version and build, whether an accelerator is available, the build's
accelerator, and the backend the process group was started with.
"""

import importlib.util
from pathlib import Path

import torch
import torch.distributed as dist

spec = importlib.util.spec_from_file_location(
    "fixed", Path(__file__).with_name("port406_fixed_init.py")
)
fixed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fixed)

backend = fixed.init(dist.HashStore())
dist.destroy_process_group()
build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "no accelerator"
accelerator = torch.accelerator.current_accelerator()
# What the earlier fix, the build's accelerator alone, would have asked for.
earlier = dist.get_default_backend_for_device(accelerator) if accelerator else "TypeError (None)"
print(
    f"torch {torch.__version__} ({build} build): accelerator available: "
    f"{torch.accelerator.is_available()}; build's accelerator: "
    f"{accelerator}; init_process_group got {backend!r} (the build's accelerator alone: "
    f"{earlier!r})"
)
