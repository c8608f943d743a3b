"""Each derive test module compiles kernels into its own empty cache, so tests never depend on (or
leave behind) kernels from another run."""

import os

import pytest

from attnphase.derive.codegen import clear_memory_cache


@pytest.fixture(autouse=True, scope="module")
def private_kernel_cache(tmp_path_factory):
    previous = os.environ.get("ATTNPHASE_CACHE_DIR")
    os.environ["ATTNPHASE_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernel-cache"))
    clear_memory_cache()
    yield
    if previous is None:
        os.environ.pop("ATTNPHASE_CACHE_DIR", None)
    else:
        os.environ["ATTNPHASE_CACHE_DIR"] = previous
    clear_memory_cache()
