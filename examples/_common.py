"""_common.py - helpers shared by the examples: a FACT line that the GPU tests read
(tests/gpu/check_facts.py compares it with the trace apx wrote), and a CUDA check."""
import json
import sys


def fact(**kw):
    """Print what the script did, as one machine-readable line."""
    print("APX_FACT " + json.dumps(kw), flush=True)


def need_cuda():
    import torch
    if not torch.cuda.is_available():
        print("this example needs a CUDA GPU", file=sys.stderr)
        sys.exit(77)
    return torch
