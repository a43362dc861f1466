"""Every rule's declarations, as the text gate, the cut and the configuration need them.

Generated from the rule classes in portlint/rules/ by `python -m portlint.generate`: do not edit.
(LibCST-free: a run that parses nothing reads this, and never imports the rules.)
"""

from __future__ import annotations

from portlint import evidence
from portlint.evidence import Entry

CATALOG: dict[str, Entry] = {
    'PORT001': Entry(
        module='port001_unused_noqa',
        name='unused-noqa',
        triggers=('noqa', 'NOQA', 'NoQA'),
        guardable=False,
        evidence=(),
        at_launches=False,
        reads_class=False,
    ),
    'PORT101': Entry(
        module='port101_hardcoded_cuda_device',
        name='hardcoded-cuda-device',
        triggers=('"cuda', "'cuda"),
        guardable=True,
        evidence=(evidence.CUDA_DEVICE_ARGUMENT,),
        at_launches=False,
        reads_class=True,
    ),
    'PORT102': Entry(
        module='port102_cuda_method_call',
        name='cuda-method-call',
        triggers=('.cuda(',),
        guardable=True,
        evidence=(),
        at_launches=False,
        reads_class=True,
    ),
    'PORT201': Entry(
        module='port201_new_inherits_int64',
        name='new-tensor-inherits-int64',
        triggers=('new_empty', 'new_full', 'new_ones', 'new_zeros'),
        guardable=False,
        evidence=(evidence.NEW_TENSOR_CALL, evidence.INT64_ORIGIN,),
        at_launches=False,
        reads_class=False,
    ),
    'PORT202': Entry(
        module='port202_implicit_int64_into_triton',
        name='implicit-int64-into-triton',
        triggers=('triton.jit', 'import jit', ']('),
        guardable=False,
        evidence=(evidence.LAUNCH, evidence.INT64_ORIGIN,),
        at_launches=True,
        reads_class=False,
    ),
    'PORT301': Entry(
        module='port301_capture_stream',
        name='capture-stream-not-warmed',
        triggers=('graph(', 'cuda import'),
        guardable=False,
        evidence=(evidence.CAPTURE,),
        at_launches=False,
        reads_class=False,
    ),
    'PORT302': Entry(
        module='port302_stream_switch_in_capture',
        name='stream-switch-in-capture',
        triggers=('graph(', 'capture_begin'),
        guardable=False,
        evidence=(evidence.CAPTURE,),
        at_launches=False,
        reads_class=False,
    ),
    'PORT401': Entry(
        module='port401_cuda_device_api',
        name='cuda-device-api',
        triggers=('torch.cuda', 'import cuda', '.cuda.', '.is_cuda', 'nccl', 'NCCL'),
        guardable=True,
        evidence=(evidence.CUDA_REFERENCE,),
        at_launches=False,
        reads_class=True,
    ),
    'PORT402': Entry(
        module='port402_cuda_stream_api',
        name='cuda-stream-api',
        triggers=('torch.cuda', 'import cuda', '.cuda.', '.is_cuda', 'nccl', 'NCCL'),
        guardable=True,
        evidence=(evidence.CUDA_REFERENCE,),
        at_launches=False,
        reads_class=True,
    ),
    'PORT403': Entry(
        module='port403_cuda_memory_api',
        name='cuda-memory-api',
        triggers=('torch.cuda', 'import cuda', '.cuda.', '.is_cuda', 'nccl', 'NCCL'),
        guardable=True,
        evidence=(evidence.CUDA_REFERENCE,),
        at_launches=False,
        reads_class=True,
    ),
    'PORT404': Entry(
        module='port404_cuda_rng_api',
        name='cuda-rng-api',
        triggers=('torch.cuda', 'import cuda', '.cuda.', '.is_cuda', 'nccl', 'NCCL'),
        guardable=True,
        evidence=(evidence.CUDA_REFERENCE,),
        at_launches=False,
        reads_class=True,
    ),
    'PORT405': Entry(
        module='port405_cuda_amp_api',
        name='cuda-amp-api',
        triggers=('torch.cuda', 'import cuda', '.cuda.', '.is_cuda', 'nccl', 'NCCL', 'GradScaler'),
        guardable=True,
        evidence=(evidence.CUDA_REFERENCE_OR_SCALER,),
        at_launches=False,
        reads_class=True,
    ),
    'PORT406': Entry(
        module='port406_nccl_backend',
        name='nccl-backend',
        triggers=('torch.cuda', 'import cuda', '.cuda.', '.is_cuda', 'nccl', 'NCCL'),
        guardable=True,
        evidence=(evidence.CUDA_REFERENCE,),
        at_launches=False,
        reads_class=True,
    ),
    'PORT407': Entry(
        module='port407_cuda_graph_api',
        name='cuda-graph-api',
        triggers=('torch.cuda', 'import cuda', '.cuda.', '.is_cuda', 'nccl', 'NCCL'),
        guardable=True,
        evidence=(evidence.CUDA_REFERENCE,),
        at_launches=False,
        reads_class=True,
    ),
    'PORT408': Entry(
        module='port408_nvtx_range',
        name='nvtx-range',
        triggers=('torch.cuda', 'import cuda', '.cuda.', '.is_cuda', 'nccl', 'NCCL'),
        guardable=True,
        evidence=(evidence.CUDA_REFERENCE,),
        at_launches=False,
        reads_class=True,
    ),
    'PORT409': Entry(
        module='port409_other_cuda_api',
        name='other-cuda-api',
        triggers=('torch.cuda', 'import cuda', '.cuda.', '.is_cuda', 'nccl', 'NCCL'),
        guardable=True,
        evidence=(evidence.CUDA_REFERENCE,),
        at_launches=False,
        reads_class=True,
    ),
}

# The device rules: silent in code that runs only on CUDA.
GUARDABLE = frozenset(code for code, entry in CATALOG.items() if entry.guardable)
