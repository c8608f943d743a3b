import os
from pathlib import Path

import pytest
import torch

from attnphase.errors import ParameterError
from attnphase.validate.device import select_device, using_numba_threads, using_threads
from attnphase.validate.seeds import generator, trial_seeds


def test_auto_matches_cuda_availability():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert select_device().type == expected
    assert select_device("auto").type == expected
    assert select_device("cpu").type == "cpu"


def test_cuda_request_without_gpu_is_a_parameter_error():
    if torch.cuda.is_available():
        assert select_device("cuda").type == "cuda"
    else:
        with pytest.raises(ParameterError, match="device"):
            select_device("cuda")


def test_unknown_device_names_the_parameter():
    with pytest.raises(ParameterError, match="device.*one of"):
        select_device("tpu")
    # audit b17 L4: an empty name ran on the CPU as "auto" (the CLI refuses --device '')
    with pytest.raises(ParameterError, match="device.*one of"):
        select_device("")


def test_same_seed_same_numbers_and_different_seed_different_numbers():
    a = torch.randn(5, generator=generator(11))
    b = torch.randn(5, generator=generator(11))
    c = torch.randn(5, generator=generator(12))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_trial_seeds_are_reproducible_and_distinct():
    seeds = trial_seeds(5, 64)
    assert seeds == trial_seeds(5, 64)
    assert len(set(seeds)) == 64
    assert all(0 <= s < 2**63 for s in seeds)


@pytest.mark.parametrize("seed", [-1, 2**63, 1.5, "x", True])
def test_bad_seed_is_rejected(seed):
    with pytest.raises(ParameterError, match="seed"):
        generator(seed)


def test_using_threads_sets_the_count_on_the_cpu_only_and_restores():
    """One context manager for torch's count: set on the CPU, left alone for None or a CUDA device, restored
    after the block, after an exception too."""
    original = torch.get_num_threads()
    torch.set_num_threads(2)
    with using_threads(1, device=torch.device("cpu")) as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with using_threads(None) as n:
        assert n is None and torch.get_num_threads() == 2
    with using_threads(1, device=torch.device("cuda")) as n:  # constructing the device needs no GPU
        assert n is None and torch.get_num_threads() == 2
    try:
        with using_threads(1, device="cpu"):
            raise RuntimeError("interrupted simulation")
    except RuntimeError:
        pass
    assert torch.get_num_threads() == 2
    with pytest.raises(ParameterError, match="num_threads"):
        with using_threads(0, name="num_threads"):
            pass
    torch.set_num_threads(original)


def test_using_numba_threads_caps_at_numbas_pool_and_restores():
    """numba's count inside the block: the one asked for, at least 1 and at most NUMBA_NUM_THREADS; restored after
    the block, after an exception too."""
    import numba

    pool = numba.config.NUMBA_NUM_THREADS
    before = numba.get_num_threads()
    with using_numba_threads(1) as n:
        assert n == 1 and numba.get_num_threads() == 1
    with using_numba_threads(pool + 5) as n:
        assert n == pool and numba.get_num_threads() == pool
    with using_numba_threads(0) as n:
        assert n == 1 and numba.get_num_threads() == 1
    with pytest.raises(RuntimeError):
        with using_numba_threads(1):
            raise RuntimeError("interrupted run")
    assert numba.get_num_threads() == before


_NUMBA_COUNT_RESTORED = """
import numba
from attnphase.validate.device import using_numba_threads

assert numba.config.NUMBA_NUM_THREADS == 2 and numba.get_num_threads() == 2
with using_numba_threads(1):
    assert numba.get_num_threads() == 1
assert numba.get_num_threads() == 2
try:
    with using_numba_threads(1):
        raise RuntimeError("interrupted run")
except RuntimeError:
    pass
assert numba.get_num_threads() == 2
print("restored")
"""


def test_using_numba_threads_gives_back_a_count_other_than_the_one_it_set():
    """With a pool of two the count before the block (2) differs from the one inside (1), so its restoration is seen
    (in a pool of one, as under NUMBA_NUM_THREADS=1, the test above cannot tell): a process of its own."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _NUMBA_COUNT_RESTORED], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "NUMBA_NUM_THREADS": "2"})
    assert out.returncode == 0 and out.stdout == "restored\n", out.stderr


@pytest.mark.parametrize("source", ["gpu", "", None, 3])
def test_bad_random_source_names_the_parameter(source):
    with pytest.raises(ParameterError, match="rng"):
        generator(0, "cpu", source)


def test_simulate_commands_reject_a_bad_random_source():
    from click.testing import CliRunner

    from attnphase.cli import main

    for command in (["simulate", "signal-recovery", "--d", "8", "--L", "4", "--R", "2", "--theta", "1", "--trials", "1",
                     "--steps", "1"],
                    ["simulate", "copy-heads", "--attention", "softmax", "--L", "4", "--V", "2", "--P", "10"],
                    ["simulate", "positional-semantic", "--omega", "0.3", "--alpha", "1", "--d", "10"]):
        result = CliRunner().invoke(main, [*command, "--rng", "gpu", "--json"])
        assert result.exit_code == 2
        assert "--rng" in result.output and "device" in result.output and "cpu" in result.output


# -- the thread policy (validate.device.choose_threads) ---------------------------------------------


@pytest.fixture
def eight_cores(monkeypatch):
    """A machine with 8 usable cores and a load average the test sets."""
    import os

    load = {"value": 0.0}
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setattr(os, "getloadavg", lambda: (load["value"], 0.0, 0.0))
    return load


def test_small_work_gets_one_thread_and_large_work_the_idle_cores(eight_cores):
    from attnphase.validate.device import PARALLEL_WORK, choose_threads

    assert choose_threads() == 1  # work unknown: treated as small
    assert PARALLEL_WORK == 2**24  # as docs/threads.md says ("at least 2²⁴ ≈ 1.7·10⁷ floating-point operations")
    assert "at least 2²⁴ ≈ 1.7·10⁷" in " ".join((Path(__file__).parents[2] / "docs" / "threads.md").read_text().split())
    assert choose_threads(work=PARALLEL_WORK - 1) == 1
    assert choose_threads(work=PARALLEL_WORK) == 8  # idle machine: every core
    eight_cores["value"] = 2.6
    assert choose_threads(work=PARALLEL_WORK) == 5  # 8 - round(2.6)
    eight_cores["value"] = 11.0
    assert choose_threads(work=10 * PARALLEL_WORK) == 1  # a busy machine: never fewer than one
    assert choose_threads(work=10 * PARALLEL_WORK, device="cuda") == 1  # the CPU only launches kernels
    assert choose_threads(3, work=1.0) == 3 and choose_threads(0, work=1.0) == 1  # --threads wins; 0: choose


def test_threads_are_set_for_the_block_and_restored():
    from attnphase.validate.device import using_threads

    before = torch.get_num_threads()
    with using_threads(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ParameterError, match="--threads"):
        with using_threads(-2):
            pass


def test_threads_option_rejects_a_bad_count_with_exit_status_2():
    import click
    from click.testing import CliRunner

    from attnphase.cli.common import threads_option

    @click.command()
    @threads_option
    def command(threads):
        click.echo(f"threads={threads}")

    assert CliRunner().invoke(command, []).output == "threads=None\n"
    assert CliRunner().invoke(command, ["--threads", "4"]).output == "threads=4\n"
    bad = CliRunner().invoke(command, ["--threads", "0"])
    assert bad.exit_code == 2 and "--threads" in bad.output


def test_the_stream_after_a_seed_stays_in_the_seed_range():
    """A second stream's seed (copy heads' runs after their data, `agreement`'s copy-heads runs) is seed + 1 wrapped:
    the top seed the CLI advertises gives 0, not the refused 2^63."""
    from attnphase.validate.seeds import MAX_SEED, generator, seed_after

    assert seed_after(5) == 6 and seed_after(MAX_SEED) == 0
    assert generator(seed_after(MAX_SEED)).initial_seed() == 0
