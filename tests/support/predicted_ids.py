"""What anyone who can describe a run can compute of its `workflow.uuid4()` values:
Temporal's core seeds a workflow's randomness from its first run id (SipHash-1-3 with
zero keys over the id's bytes and 0xff, as Python's own bytes hash is with
PYTHONHASHSEED=0). The attack tests hold these ids to show no id a run falls back to is
computed from them."""

from __future__ import annotations

import random
import subprocess
import sys
import uuid


def seed_of(run_id: str) -> int:
    """The random seed Temporal's core gives a workflow whose first run id is `run_id`."""
    data = run_id.encode() + bytes([255])
    code = f"import sys; sys.stdout.write(str(hash({data!r}) % 2**64))"
    env = {"PYTHONHASHSEED": "0"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    return int(done.stdout)


def uuid4s(run_id: str, count: int) -> list[str]:
    """The first `count` values `workflow.uuid4()` gives that run, as hex."""
    rng = random.Random(seed_of(run_id))
    made = [rng.getrandbits(128).to_bytes(16, "big") for _ in range(count)]
    return [uuid.UUID(bytes=b, version=4).hex for b in made]
