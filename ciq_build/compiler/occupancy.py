"""Theoretical occupancy of a kernel: resident warps an SM over the most it holds, from static figures alone.

What the CUDA Occupancy Calculator, ``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` and Nsight
Compute's Occupancy section ("Theoretical Occupancy", "Block Limit Registers", ...) compute: the
blocks an SM holds at once are the fewest that any one resource allows (registers, warp slots, block
slots, shared memory, and on sm_90 and later named barriers), and the occupancy is those blocks'
warps over the SM's most. The rules are those of the CUDA toolkit's ``cuda_occupancy.h`` (CUDA 13.3):
registers are allocated per warp in units of 256, from each of the SM's 4 sub-partitions' 16 K;
shared memory per block in units of 128 bytes (256 on sm_75) with the driver's reserved 1 KB (sm_80
and later) added, from the largest shared-memory carve-out of the SM. A block's shared memory is its
static figure plus the dynamic shared memory its launch takes, which no static figure holds: the caller
adds what the user declares (DYNAMIC_SHARED_MEMORY, ciq_build.project.per_block).

The per-architecture figures are `LIMITS`, one row per architecture the toolkit builds. Each
architecture's row is the CUDA C++ Programming Guide's (Compute Capabilities, Table 30 "Device and
Streaming Multiprocessor (SM) Information per Compute Capability" and Table 31 "Memory Information per
Compute Capability": resident blocks, warps and shared memory per SM); the allocation granularities,
the reserved shared memory and the barrier slots, which the guide does not tabulate, are
``cuda_occupancy.h``'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from ciq_build.compiler.architectures import arch_generation
from ciq_build.errors import ConfigError, ToolchainError

WARP = 32
MAX_THREADS_PER_BLOCK = 1024
REGISTERS_PER_SM = 64 * 1024  # every architecture in LIMITS (Table 31), also the most one block may use
REGISTER_UNIT = 256  # registers are allocated to a warp in units of this many
SUB_PARTITIONS = 4  # each holds a quarter of the register file; a warp's registers lie in one
MAX_REGISTERS_PER_THREAD = 255
KB = 1024


@dataclass(frozen=True)
class SmLimits:
    """What one SM of an architecture holds at once."""

    arch: int  # 90 for sm_90, sm_90a
    blocks: int  # resident blocks
    warps: int  # resident warps
    shared: int  # bytes of shared memory: the largest carve-out
    shared_unit: int  # bytes: a block's shared memory is allocated in units of this many
    reserved_shared: int  # bytes the driver adds to every block's shared memory
    # Named barriers an SM holds, in block slots: a block using n barriers leaves blocks * barrier_slots // n
    # blocks; 0: barriers do not limit (before sm_90).
    barrier_slots: int


# Columns: arch, resident blocks, resident warps, shared memory per SM (KB) | granularity (bytes), reserved (bytes),
# barrier slots. Left of | the Programming Guide's Tables 30-31; right, cuda_occupancy.h's.
LIMITS: dict[int, SmLimits] = {row.arch: row for row in (
    SmLimits(75, 16, 32, 64 * KB, 256, 0, 0),
    SmLimits(80, 32, 64, 164 * KB, 128, KB, 0),
    SmLimits(86, 16, 48, 100 * KB, 128, KB, 0),
    SmLimits(87, 16, 48, 164 * KB, 128, KB, 0),
    SmLimits(89, 24, 48, 100 * KB, 128, KB, 0),
    SmLimits(90, 32, 64, 228 * KB, 128, KB, 2),
    SmLimits(100, 32, 64, 228 * KB, 128, KB, 2),
    SmLimits(103, 32, 64, 228 * KB, 128, KB, 1),
    SmLimits(110, 24, 48, 228 * KB, 128, KB, 1),
    SmLimits(120, 24, 48, 100 * KB, 128, KB, 1),
    SmLimits(121, 24, 48, 100 * KB, 128, KB, 1),
)}


def limits(arch: str | int) -> SmLimits:
    """The row of `arch` ("90a", "sm_100f", 120); a ConfigError naming the architectures known."""
    number = arch if isinstance(arch, int) else arch_generation(arch)
    if number not in LIMITS:
        raise ConfigError(f"no occupancy limits are known for sm_{number} (ciq_build.compiler.occupancy.LIMITS has "
                          f"{', '.join(f'sm_{a}' for a in LIMITS)}); tune --architecture one of those, or drop the "
                          "occupancy objective")
    return LIMITS[number]


def knows(arch: str) -> bool:
    """Whether `arch` has a row of LIMITS."""
    try:
        return arch_generation(arch) in LIMITS
    except ToolchainError:
        return False


@dataclass(frozen=True)
class Occupancy:
    """One kernel's theoretical occupancy on one architecture at one block size."""

    blocks: int  # resident blocks an SM
    warps: int  # resident warps an SM (blocks x the block's warps)
    max_warps: int  # the most the SM holds
    limiter: str  # what allows no more blocks: registers, warps, blocks, shared memory or barriers ("registers and
    # warps" where two allow as many)

    @property
    def percent(self) -> float:
        """As Nsight Compute prints "Theoretical Occupancy": 50.0 for half the warp slots."""
        return 100.0 * self.warps / self.max_warps


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def allocated_registers(registers: int) -> int:
    """The registers a thread is allocated for a kernel that uses `registers`: a warp's come in units of
    REGISTER_UNIT, 8 a thread, so 17 to 24 are all 24 (the same blocks an SM at any block size)."""
    return _round_up(registers * WARP, REGISTER_UNIT) // WARP


def blocks_by_registers(sm: SmLimits, registers: int, threads: int) -> int:
    """Blocks an SM's register file holds (0: one block does not fit)."""
    if registers > MAX_REGISTERS_PER_THREAD:
        return 0
    if registers <= 0:
        return sm.blocks
    per_warp = _round_up(registers * WARP, REGISTER_UNIT)
    warps = -(-threads // WARP)
    # The hardware's check assumes a block's warps spread over every sub-partition.
    if per_warp * _round_up(warps, SUB_PARTITIONS) > REGISTERS_PER_SM:
        return 0
    warps_per_sm = (REGISTERS_PER_SM // SUB_PARTITIONS // per_warp) * SUB_PARTITIONS
    return warps_per_sm // warps


def occupancy(sm: SmLimits, registers: int, threads: int, shared: int = 0, barriers: int = 0) -> Occupancy:
    """The theoretical occupancy of a kernel using `registers` a thread, `shared` bytes of shared memory (static
    and dynamic) and `barriers` named barriers a block, launched in blocks of `threads`, on `sm`."""
    if not 0 < threads <= MAX_THREADS_PER_BLOCK:
        raise ValueError(f"{threads} threads a block: a block has 1 to {MAX_THREADS_PER_BLOCK}")
    warps = -(-threads // WARP)
    allocated = _round_up(shared + sm.reserved_shared, sm.shared_unit)
    found = {
        "registers": blocks_by_registers(sm, registers, threads),
        "warps": sm.warps // warps,
        "blocks": sm.blocks,
        "shared memory": sm.shared // allocated if allocated else sm.blocks,
    }
    if sm.barrier_slots and barriers > 0:
        found["barriers"] = sm.blocks * sm.barrier_slots // barriers
    blocks = min(found.values())
    limiter = " and ".join(name for name, value in found.items() if value == blocks)  # every limit reached
    return Occupancy(blocks, blocks * warps, sm.warps, limiter)


@dataclass(frozen=True)
class Step:
    """Up to `registers` registers a thread, `blocks` blocks an SM fit (occupancy `percent`)."""

    registers: int
    blocks: int
    percent: float


def register_steps(sm: SmLimits, threads: int, shared: int = 0, barriers: int = 0) -> list[Step]:
    """Where the occupancy changes with the register count at this block size: one `Step` per occupancy, the
    most registers that still give it, from the fewest registers up (the last step ends at 255)."""
    steps: list[Step] = []
    for registers in range(1, MAX_REGISTERS_PER_THREAD + 1):
        here = occupancy(sm, registers, threads, shared, barriers)
        if steps and steps[-1].blocks == here.blocks:
            steps[-1] = Step(registers, here.blocks, here.percent)
        else:
            steps.append(Step(registers, here.blocks, here.percent))
    return [step for step in steps if step.blocks > 0]


def describe_steps(sm: SmLimits, registers: int, threads: int, shared: int = 0, barriers: int = 0) -> str:
    """The steps around a kernel's register count, as the summary says them:
    "48 registers at 512 threads: 2 blocks an SM (50%); 3 (75%) at <= 40, 1 (25%) above 64"."""
    here = occupancy(sm, registers, threads, shared, barriers)
    steps = register_steps(sm, threads, shared, barriers)
    index = next((i for i, step in enumerate(steps) if registers <= step.registers), len(steps) - 1)
    parts = [f"{registers} registers at {threads} threads: {here.blocks} block{'s' if here.blocks != 1 else ''} "
             f"an SM ({here.percent:.4g}%, limited by {here.limiter})"]
    if index > 0:
        up = steps[index - 1]
        parts.append(f"{up.blocks} ({up.percent:.4g}%) at <= {up.registers}")
    if index + 1 < len(steps):
        parts.append(f"{steps[index + 1].blocks} ({steps[index + 1].percent:.4g}%) above {steps[index].registers}")
    return "; ".join([parts[0], ", ".join(parts[1:])]) if len(parts) > 1 else parts[0]
