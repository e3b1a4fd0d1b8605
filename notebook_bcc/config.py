"""RunConfig: every setting of a run, frozen. The CLI builds one; the runner only reads it."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, replace
from typing import Any

__all__ = ["DEFAULTS", "RunConfig", "default_model"]


def default_model() -> str:
    """``$BCC_MODEL`` when set, else the built-in offline analyst."""
    return os.environ.get("BCC_MODEL") or "offline"


#: The range of each numeric setting: (bound, whether the bound itself is excluded).
RANGES: dict[str, tuple[float, bool]] = {
    "cell_timeout": (0, True),
    "kernel_startup_timeout": (0, True),
    "llm_timeout": (0, True),
    "max_wall_s": (0, True),
    "max_behaviors_per_step": (1, False),
    "max_alternatives": (1, False),
    "max_steps_per_stage": (1, False),
    "max_stages": (1, False),
    "max_llm_calls": (0, False),
    "max_cost_usd": (0, False),
    "max_kernel_restarts": (0, False),
    "max_repairs": (0, False),
    "sandbox_memory_mb": (0, True),
    "sandbox_max_processes": (0, True),
    "sandbox_max_file_mb": (0, True),
}


def half_of_memory_mb() -> int:
    """Half of this machine's physical memory, in MiB (the sandbox's default memory)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):  # not reported here
        return 4096
    return max(256, total // 2 // (1 << 20))


@dataclass(frozen=True)
class RunConfig:
    #: Agent backend: "offline", "replay:<run_dir>", or any litellm model string.
    model: str = field(default_factory=default_model)
    #: Base URL of an OpenAI-compatible server (litellm ``api_base``).
    api_base: str | None = None
    #: Seed for ``random``/``numpy`` in the parameters cell and for the offline analyst.
    seed: int = 42
    #: Seconds a single cell may run before it is interrupted.
    cell_timeout: float = 600.0
    #: Seconds to wait for a kernel to start.
    kernel_startup_timeout: float = 60.0
    #: G3 caps.
    max_behaviors_per_step: int = 4
    max_steps_per_stage: int = 8
    max_stages: int = 10
    #: Alternative behaviors a fork may run at once, each in its own kernel (1: no forks).
    max_alternatives: int = 3
    #: Run a fork's branches at once (False: one after another, as benchmarks/fork_wall.py
    #: compares; no CLI option).
    fork_at_once: bool = True
    #: G6 budgets (None = unlimited).
    max_llm_calls: int | None = None
    max_cost_usd: float | None = None
    max_wall_s: float | None = None
    #: Kernel restarts (death, or a timed-out cell ignoring the interrupt) before exit 5.
    max_kernel_restarts: int = 3
    #: Re-asks after an invalid payload (LLM backends only).
    max_repairs: int = 2
    #: Seconds one model call may take.
    llm_timeout: float = 120.0
    #: "compact": a model's reply may carry the payloads of the transitions it can foresee (a
    #: stage's steps, a behavior's actions, the stage reflection, a retry's or the next step's
    #: behavior), used without a call; "full": every agent is asked (docs/agents.md,
    #: "Compact rounds").
    rounds: str = "compact"
    #: "continue" marks a capped step failed and goes on; "abort" fails the workflow.
    on_step_failure: str = "continue"
    #: Keep failed code cells in notebook.ipynb (they are always in logs/).
    keep_failed_cells: bool = False
    #: Re-execute the notebook in a fresh kernel at the end.
    verify: bool = True
    #: Delete ``safe="true"`` deprecated variables from the kernel.
    free_deprecated: bool = True
    #: Characters of cell output kept per cell in the notebook / shown to agents.
    output_cap_chars: int = 20_000
    excerpt_chars: int = 4_000
    #: Run local kernels in a bubblewrap sandbox (nothing of the host, read-only filesystem but
    #: the kernel's ``outputs/`` and a private /tmp, home hidden). Chosen when the run is created
    #: (``kernel.sandbox.choose``) and kept by ``bcc resume``.
    sandbox: bool = False
    #: Limits of a sandboxed kernel (with every process it starts), kept by ``bcc resume``:
    #: address space per process (MiB), processes (binds only for a user other than root)
    #: and the largest file it may write (MiB).
    sandbox_memory_mb: int = field(default_factory=half_of_memory_mb)
    sandbox_max_processes: int = 512
    sandbox_max_file_mb: int = 4096
    #: Base URL of a Jupyter Kernel Gateway / Enterprise Gateway: kernels are started there
    #: (token from ``$BCC_KERNEL_GATEWAY_TOKEN``, never saved). None: a local kernel.
    kernel_gateway: str | None = None
    #: A directory the gateway's kernels can read that holds the data files (linked, not sent).
    kernel_data_dir: str | None = None
    #: Leave the gateway kernels' working directories (``bcc-runs/<run id>`` and its
    #: ``.verify``) on the gateway's side; by default each kernel removes its own at shutdown.
    keep_gateway_files: bool = False

    def out_of_range(self) -> list[str]:
        """The numeric settings outside their range, each as ``--name must be ≥ 0 (got -1)``."""
        wrong = []
        for name, (low, open_) in RANGES.items():
            value = getattr(self, name)
            if value is not None and (value <= low if open_ else value < low):
                wrong.append(
                    f"--{name.replace('_', '-')} must be {'>' if open_ else '>='} {low} (got {value})"
                )
        return wrong

    def with_budgets(self, **changes: Any) -> RunConfig:
        """A copy with the given (non-None) budget options replaced; used by ``bcc resume``."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunConfig:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def is_offline(self) -> bool:
        return self.model == "offline"


#: Every setting's default, the one place it is written: the CLI's options and the agents'
#: constructors read theirs here.
DEFAULTS = RunConfig(model="offline")
