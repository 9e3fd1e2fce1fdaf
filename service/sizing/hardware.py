"""GPUs and links as the core sees them: capacities in bytes, bandwidths in bytes per second."""

import re
from typing import Literal

import msgspec

from service.sizing.errors import require

CapacityBasis = Literal["marketed", "driver"]
"""driver (the default): the bytes the driver shows usable (nvidia-smi's "Total" MiB, rocm-smi's
bytes), one basis for every GPU; marketed: the vendor's figure read as decimal GB (the seeds'
method). The marketed figures mix units: an H100's "80 GB" is 80 GiB of HBM (81,559 MiB
visible, 85.5 GB) while a B200's "192 GB" is decimal (183,359 MiB visible, 192.3 GB), so on the
marketed basis the GiB-marketed GPUs lose about 7% against the decimal ones."""

DEFAULT_CAPACITY_BASIS: CapacityBasis = "driver"


class LinkSpec(msgspec.Struct, frozen=True, kw_only=True):
    slug: str
    name: str = ""
    kind: Literal["nvlink", "pcie", "c2c", "infiniband", "other"] = "other"
    bytes_per_s_per_direction: int


class GpuSpec(msgspec.Struct, frozen=True, kw_only=True):
    slug: str
    name: str = ""
    memory_bytes: int
    """Marketed capacity in decimal bytes (80 GB -> 80_000_000_000)."""
    driver_visible_bytes: int = 0
    """nvidia-smi "Total" in bytes (81,559 MiB -> 85_520_809_984); 0 when unknown."""
    torch_visible_bytes: int = 0
    """The device total that torch.cuda.mem_get_info reports, which vLLM's memory budget starts
    from (79.18 GiB on an H100 whose nvidia-smi shows 79.65); 0 when not measured."""
    hbm_bytes_per_s: int
    nvlink: LinkSpec | None = None
    """The GPU-to-GPU fabric inside a node; None: splits run over PCIe."""
    host_link: LinkSpec | None = None
    fp8: bool = False
    fp4: bool = False
    gpus_per_node: int = 8
    architecture: str = ""
    """The catalogue's generation and ISA, "Hopper (sm_90)": the serving model's efficiency
    factors belong to the generation it names first."""
    vendor: str = ""
    """The catalogue's vendor: "NVIDIA", "AMD" (vLLM's ROCm build), "Intel"."""
    compute_capability: tuple[int, int] | None = None
    """The CUDA compute capability the catalogue's architecture names ("Hopper (sm_90)": (9, 0),
    ``compute_capability_of``); None for a GPU without one (AMD, Intel) or not stated."""
    peer_to_peer: bool = True
    """Whether two of these GPUs can read each other's memory over PCIe (NVIDIA's GeForce cards
    cannot: the driver disables it), which vLLM's custom all-reduce needs without NVLink."""
    bf16_dense_flops_per_s: float = 0.0
    """Dense (no sparsity) BF16 tensor-core peak; 0 when unknown."""
    fp8_dense_flops_per_s: float = 0.0
    """Dense FP8 tensor-core peak; 0 when the GPU has no FP8 tensor cores or it is unknown."""
    fp4_dense_flops_per_s: float = 0.0
    """Dense FP4 (both operands 4-bit) tensor-core peak; 0 when the GPU has none or it is
    unknown."""

    @property
    def is_hopper(self) -> bool:
        """Compute capability 9.x (H100, H200, GH200)."""
        return self.compute_capability is not None and self.compute_capability[0] == 9

    def capacity_bytes(self, basis: CapacityBasis) -> int:
        """The bytes a plan fills. A GPU without a driver figure counts its marketed figure in
        decimal bytes on either basis: the smaller reading of the vendor's number (for every
        catalogue GPU, 0.1% (B200) to 7.4% (A100) under what the driver shows), so a plan never
        counts memory that is not there; the plan warns (capacity_basis_fallback)."""
        if basis == "driver" and self.driver_visible_bytes:
            return self.driver_visible_bytes
        return self.memory_bytes

    def driver_figure_missing(self, basis: CapacityBasis) -> bool:
        return basis == "driver" and not self.driver_visible_bytes


def validate_gpu(gpu: GpuSpec, field: str = "gpu") -> GpuSpec:
    require(gpu.memory_bytes > 0, f"{field}.memory_bytes", "must be positive")
    require(gpu.driver_visible_bytes >= 0, f"{field}.driver_visible_bytes", "must not be negative")
    require(gpu.torch_visible_bytes >= 0, f"{field}.torch_visible_bytes", "must not be negative")
    require(gpu.hbm_bytes_per_s > 0, f"{field}.hbm_bytes_per_s", "must be positive")
    require(gpu.gpus_per_node > 0, f"{field}.gpus_per_node", "must be positive")
    return gpu


_SM = re.compile(r"\bsm_(\d+)(\d)\b")


def compute_capability_of(architecture: str) -> tuple[int, int] | None:
    """The compute capability in a catalogue architecture's ISA: "Hopper (sm_90)" -> (9, 0),
    "Blackwell (sm_100)" -> (10, 0), "Ada Lovelace (sm_89)" -> (8, 9); None without an sm_
    figure ("CDNA 3 (gfx942)")."""
    m = _SM.search(architecture)
    return (int(m[1]), int(m[2])) if m else None
