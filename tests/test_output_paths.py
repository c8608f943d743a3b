"""Where a command writes: a bad output path is refused before any work (exit 2 naming the option), never a
traceback after minutes of computing, never the current directory in place of an empty path."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time

import pytest
from click.testing import CliRunner

from attnphase.cli import main
from attnphase.store import ResultStore


@contextlib.contextmanager
def read_only(directory):
    """`directory` made one that nothing can be created in for this user, then restored: mode 555, or for root
    (whom modes do not stop) the immutable attribute, as on read-only media. Skips the test where neither works."""
    directory.chmod(0o555)
    try:
        if os.access(directory, os.W_OK):
            if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(directory)],
                                                                capture_output=True).returncode != 0:
                pytest.skip("cannot make a directory read-only here (root, without chattr +i)")
            try:
                yield directory
            finally:
                subprocess.run(["chattr", "-i", str(directory)], check=True)
        else:
            yield directory
    finally:
        directory.chmod(0o755)


def assert_refused(result, option):
    """Exit 2, a usage error naming `option`, nothing on stdout and no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    error = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and option in error[0], result.stderr
    assert "Traceback" not in result.output and result.stdout == ""
    return error[0]


def invoke(*args):
    started = time.perf_counter()
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert time.perf_counter() - started < 2, "the path must be checked before any computation"
    return result


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "a_file"
    path.write_text("not a directory\n")
    return path


# --- directories a command writes into: reproduce --out, derive --dir, threshold --checkpoint-dir --------------------


COMMANDS_WRITING_A_DIRECTORY = [
    (["reproduce", "potts", "--quick", "--out"], "--out"),
    (["derive", "potts", "--dir"], "--dir"),
    (["threshold", "positional-semantic", "--omega", "0.3", "--checkpoint-dir"], "--checkpoint-dir"),
]


@pytest.mark.parametrize("command, option", COMMANDS_WRITING_A_DIRECTORY)
def test_an_empty_directory_path_is_refused(command, option, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    message = assert_refused(invoke(*command, ""), option)
    assert "empty path" in message
    assert list(tmp_path.iterdir()) == []  # nothing written to the current directory


@pytest.mark.parametrize("command, option", COMMANDS_WRITING_A_DIRECTORY)
def test_a_directory_below_a_file_is_refused(command, option, a_file):
    message = assert_refused(invoke(*command, a_file / "sub"), option)
    assert "is a file" in message
    message = assert_refused(invoke(*command, a_file), option)
    assert "is a file" in message


@pytest.mark.parametrize("command, option", COMMANDS_WRITING_A_DIRECTORY)
def test_a_read_only_directory_is_refused(command, option, tmp_path):
    (tmp_path / "shelf").mkdir()
    with read_only(tmp_path / "shelf") as shelf:
        message = assert_refused(invoke(*command, shelf), option)
        assert "not writable" in message
        message = assert_refused(invoke(*command, shelf / "new" / "deeper"), option)
        assert "cannot be created" in message and "not writable" in message


# /proc takes no new files from anyone, root included, although its permission bits let root write there.
NOTHING_CAN_BE_CREATED_HERE = "/proc"


@pytest.mark.skipif(not os.path.isdir(NOTHING_CAN_BE_CREATED_HERE), reason="needs Linux's /proc")
@pytest.mark.parametrize("command, option", [
    *COMMANDS_WRITING_A_DIRECTORY,
    (["store", "export", "--out"], "--out"),
    (["sweep", "demo", "--grid", "beta=1,2", "--workers", "1", "--store"], "--store"),
])
def test_a_place_where_no_file_can_be_created_is_refused_whoever_runs_it(command, option, tmp_path, monkeypatch):
    """Writability is tried, not read off the permission bits, which say yes to root everywhere."""
    path = f"{NOTHING_CAN_BE_CREATED_HERE}/attnphase-out"
    if command[:2] == ["store", "export"]:
        with ResultStore(tmp_path / "s.sqlite") as results:
            results.put("demo", {"beta": 1.0}, {"m": 0.5})
        command = ["store", "export", "--store", tmp_path / "s.sqlite", "--out"]
    monkeypatch.chdir(tmp_path)
    message = assert_refused(invoke(*command, path), option)
    assert "cannot be created" in message and "not writable" in message
    assert not os.path.exists(path)


@pytest.mark.parametrize("command, option", [
    *COMMANDS_WRITING_A_DIRECTORY,
    (["store", "export", "--out"], "--out"),
    (["sweep", "demo", "--grid", "beta=1,2", "--workers", "1", "--store"], "--store"),
])
def test_a_path_too_long_for_the_system_is_refused_naming_the_option(command, option, tmp_path, monkeypatch):
    """A name over 255 bytes, or a path over 4096: the existence check read it as a new path that could be created,
    and `sweep --store` then failed opening the store (exit 1)."""
    if command[:2] == ["store", "export"]:
        with ResultStore(tmp_path / "s.sqlite") as results:
            results.put("demo", {"beta": 1.0}, {"m": 0.5})
        command = ["store", "export", "--store", tmp_path / "s.sqlite", "--out"]
    monkeypatch.chdir(tmp_path)
    kind = "Directory" if (command, option) in COMMANDS_WRITING_A_DIRECTORY else "File"
    for path in (str(tmp_path / ("e" * 300)), str(tmp_path / "/".join(["d" * 200] * 25) / "out")):
        message = assert_refused(invoke(*command, path), option)
        assert message == f"Error: Invalid value for '{option}': {kind} {path!r} cannot be created: File name too long."
    assert sorted(os.listdir(tmp_path)) == (["s.sqlite"] if command[0] == "store" else [])


THRESHOLD_KEPT = ["threshold", "positional-semantic", "--omega", "0.3", "--which", "alpha_c", "--tol", "0.005"]


def test_a_cache_root_where_thresholds_cannot_be_kept_is_named_by_its_variable(a_file, monkeypatch):
    """--checkpoint-dir's default is made of $ATTNPHASE_CACHE_DIR: where it cannot be made, the message names the
    variable with its value (the user gave no --checkpoint-dir) as text, not as a Path's repr."""
    monkeypatch.setenv("ATTNPHASE_CACHE_DIR", str(a_file))
    error = assert_refused(CliRunner().invoke(main, THRESHOLD_KEPT), "$ATTNPHASE_CACHE_DIR")
    assert error.startswith(f"Error: invalid value for $ATTNPHASE_CACHE_DIR: {str(a_file)!r} (allowed: a writable "
                            f"directory ([Errno 20] Not a directory: '{a_file}/thresholds/threshold-")


@pytest.mark.parametrize("command", [["solve", "positional-semantic", "--omega", "0.3", "--alpha", "1.25", "--json"],
                                     ["reproduce", "potts", "--out", "report", "--json"]])
def test_a_cache_root_where_kernels_cannot_be_kept_is_named_by_its_variable(command, a_file, tmp_path):
    """Every command compiles kernels into $ATTNPHASE_CACHE_DIR/kernels: where that cannot be made, the command stops
    at once naming the variable (before: a NotADirectoryError with exit 1, and reproduce blamed --out). In a fresh
    process, as a user meets it (this one holds its kernels in memory)."""
    import sys

    done = subprocess.run([sys.executable, "-m", "attnphase", *command], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "ATTNPHASE_CACHE_DIR": str(a_file)}, timeout=120)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == (f"Error: invalid value for $ATTNPHASE_CACHE_DIR: {str(a_file)!r} (allowed: a "
                                   f"writable directory ([Errno 20] Not a directory: '{a_file}/kernels'))")


def test_a_checkpoint_path_too_long_for_the_system_is_named_by_where_it_came_from(tmp_path, monkeypatch):
    """A checkpoint directory too long for the system: --checkpoint-dir is refused as it is read (as every option
    naming a place to write is, below); the default, made of $ATTNPHASE_CACHE_DIR, fails when it is made and is named
    by that variable, the path as text."""
    too_long = str(tmp_path / ("c" * 300))
    given = assert_refused(CliRunner().invoke(main, [*THRESHOLD_KEPT, "--checkpoint-dir", too_long]),
                           "--checkpoint-dir")
    assert given == (f"Error: Invalid value for '--checkpoint-dir': Directory {too_long!r} cannot be created: File "
                     "name too long.")
    monkeypatch.setenv("ATTNPHASE_CACHE_DIR", too_long)
    by_default = assert_refused(CliRunner().invoke(main, THRESHOLD_KEPT), "$ATTNPHASE_CACHE_DIR")
    assert by_default.startswith(f"Error: invalid value for $ATTNPHASE_CACHE_DIR: {too_long!r} (allowed: a writable "
                                 f"directory ([Errno 36] File name too long: '{too_long}/thresholds")


@pytest.mark.parametrize("model, report", [("potts", "potts"), ("all", "copy_heads")])
def test_reproduce_refuses_an_out_where_a_report_directory_is_a_file(model, report, tmp_path):
    """A file where a model's report directory goes is refused before any model runs (with `all`, a later model's
    too), naming --out, not a FileExistsError after the earlier models."""
    (tmp_path / report).write_text("not a report\n")
    message = assert_refused(invoke("reproduce", model, "--quick", "--out", tmp_path), "--out")
    assert f"{tmp_path / report}' is a file, not a directory" in message
    assert sorted(os.listdir(tmp_path)) == [report]


@pytest.mark.skipif(not os.path.isdir(NOTHING_CAN_BE_CREATED_HERE), reason="needs Linux's /proc")
@pytest.mark.parametrize("model, where", [("potts", "potts"), ("all", "copy_heads"), ("all", "signal_recovery/theory")])
def test_reproduce_refuses_a_report_directory_that_takes_no_file_before_any_model_runs(model, where, tmp_path):
    """A model's report directory (or a directory of its kept pieces) where no file can be created, for root too, is
    refused naming --out before the first model's work: not a bare PermissionError after the earlier models."""
    unwritable = tmp_path / where
    unwritable.parent.mkdir(parents=True, exist_ok=True)
    unwritable.symlink_to(NOTHING_CAN_BE_CREATED_HERE, target_is_directory=True)
    before = sorted(os.listdir(tmp_path))
    message = assert_refused(invoke("reproduce", model, "--quick", "--out", tmp_path), "--out")
    assert f"{unwritable}' is not writable" in message and "--out" in message
    assert sorted(os.listdir(tmp_path)) == before  # no model ran


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("as_json", [False, True])
def test_reproduce_stopped_by_a_full_disk_names_where_and_prints_one_json_object(as_json, tmp_path):
    """A write that fails while the run goes on (here ENOSPC, from /dev/full where the report goes) ends with one
    line naming the report directory and the reason, exit 1, and with --json exactly one JSON object saying so."""
    import json

    import os

    (tmp_path / "potts").mkdir()
    # a report file is written to a sibling named after the process and renamed: that sibling is /dev/full
    (tmp_path / "potts" / f"report.md.{os.getpid()}.partial").symlink_to("/dev/full")
    result = CliRunner().invoke(main, ["reproduce", "potts", "--quick", "--out", str(tmp_path),
                                       *(["--json"] if as_json else [])])
    assert result.exit_code == 1, result.output
    (error,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert f"below {tmp_path / 'potts'}: No space left on device (ENOSPC)" in error, error
    assert "(--out)" in error and "OSError" not in error and "Traceback" not in result.output
    if as_json:
        (line,) = result.stdout.splitlines()
        payload = json.loads(line)
        assert payload["command"] == "reproduce" and payload["model"] == "potts"
        assert payload["status"] == "failed" and payload["success"] is False
        assert payload["message"] == error.removeprefix("error: ")
    else:
        assert result.stdout == ""


def test_derive_check_only_reads_so_a_read_only_directory_is_fine(tmp_path):
    (tmp_path / "shelf").mkdir()
    with read_only(tmp_path / "shelf") as shelf:
        result = invoke("derive", "potts", "--check", "--dir", shelf)
    assert result.exit_code == 1 and "stale" in result.output  # the page is missing there: stale, not refused


# --- the file store export writes -------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "s.sqlite"
    with ResultStore(path) as results:
        results.put("demo", {"beta": 1.0}, {"m": 0.5})
    return path


@pytest.mark.parametrize("out, reason", [
    ("", "empty path"),
    ("missing/x.csv", "does not exist"),
    ("a_file/x.csv", "is a file"),
    (".", "is a directory"),
])
def test_export_refuses_an_out_it_cannot_write(out, reason, tmp_path, store, a_file, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    message = assert_refused(invoke("store", "export", "--store", store, "--out", out), "--out")
    assert reason in message
    assert sorted(tmp_path.iterdir()) == before


def test_export_refuses_a_read_only_out(tmp_path, store):
    (tmp_path / "shelf").mkdir()
    with read_only(tmp_path / "shelf") as shelf:
        message = assert_refused(invoke("store", "export", "--store", store, "--out", shelf / "x.csv"), "--out")
    assert "not writable" in message


@pytest.mark.parametrize("suffix", ["", "-wal"])
def test_export_never_writes_over_the_store_it_reads(suffix, store):
    saved = store.read_bytes()
    target = store.with_name(store.name + suffix)
    message = assert_refused(invoke("store", "export", "--store", store, "--out", target), "--out")
    assert "results store itself" in message
    assert store.read_bytes() == saved and (suffix == "" or not target.exists())


def test_export_refuses_an_out_that_is_a_named_pipe_and_leaves_it_one(tmp_path, store):
    """The export is renamed over its --out: over a device or a named pipe that replaced the node with a plain file
    (an audit turned /dev/full into a CSV file, running as root). A path that exists and is not a regular file is
    refused by name, and stays what it was."""
    import stat

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    message = assert_refused(invoke("store", "export", "--store", store, "--out", pipe), "--out")
    assert "not a regular file" in message and stat.S_ISFIFO(os.stat(pipe).st_mode)


def test_export_never_writes_over_a_hard_link_to_the_store(tmp_path, store):
    saved = store.read_bytes()
    link = tmp_path / "table.csv"
    os.link(store, link)  # another name for the store's own file
    message = assert_refused(invoke("store", "export", "--store", store, "--out", link), "--out")
    assert "results store itself" in message and store.read_bytes() == saved


def test_a_sweep_refuses_an_empty_store_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert_refused(invoke("sweep", "demo", "--grid", "beta=1,2", "--store", ""), "--store")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["sweep", "demo", "--grid", "beta=1,2", "--workers", "1"], ["store", "list"],
                                     ["store", "check"], ["store", "export", "--out", "t.csv"]])
def test_a_store_path_that_is_a_directory_is_a_bad_value_by_option_and_by_environment(command, tmp_path, monkeypatch):
    """`store --help`: a store path that cannot be a store file is a bad value (exit 2), given by --store or by
    $ATTNPHASE_STORE, and the message names where it came from."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_directory").mkdir()
    assert "is a directory" in assert_refused(invoke(*command, "--store", "a_directory"), "--store")
    monkeypatch.setenv("ATTNPHASE_STORE", "a_directory")
    assert "is a directory" in assert_refused(invoke(*command), "$ATTNPHASE_STORE")
    assert sorted(os.listdir(tmp_path)) == ["a_directory"]


def test_reproduce_refuses_cuda_without_a_gpu_before_any_model_runs(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("needs a machine without a CUDA device")
    assert_refused(invoke("reproduce", "all", "--quick", "--device", "cuda", "--out", tmp_path / "reports"),
                   "--device")
    assert not (tmp_path / "reports").exists()



@pytest.mark.parametrize("command", [["sweep", "potts", "--grid", "beta=1,2", "--set", "q=3", "--workers", "1"],
                                     ["store", "list", "--json"]])
def test_an_empty_store_variable_is_refused_not_read_as_unset(command, tmp_path, monkeypatch):
    """`attnphase store --help`: an empty path from $ATTNPHASE_STORE is a bad value (exit 2). It was read as unset:
    the sweep wrote ./results.sqlite, a store the user never named (audit b15)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTNPHASE_STORE", "")
    error = assert_refused(CliRunner().invoke(main, command), "$ATTNPHASE_STORE")
    assert error == ("Error: invalid value for $ATTNPHASE_STORE: '' (allowed: the path of a store file (unset: "
                     "./results.sqlite); an empty path names no file)")
    assert os.listdir(tmp_path) == []


def test_a_derivation_page_whose_write_fails_is_the_earlier_page_and_no_sibling_is_left(tmp_path, monkeypatch):
    """`attnphase derive` writes each page through `written_atomically` (audit t18 M31): a write that fails half-way
    (a full disk) leaves the earlier page whole, not its first characters, and no sibling."""
    from pathlib import Path

    def derive():  # not `invoke`: writing the page is computation, which that helper's time limit leaves out
        return CliRunner().invoke(main, ["derive", "potts", "--dir", str(tmp_path)])

    assert derive().exit_code == 0
    (page,) = tmp_path.glob("*.md")
    page.write_text("an earlier page\n")
    real_write_text = Path.write_text

    def fill_the_disk(path, text, *args, **kwargs):
        real_write_text(path, text[:3], *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", fill_the_disk)
    result = derive()
    monkeypatch.undo()
    assert result.exit_code != 0 and page.read_text() == "an earlier page\n"
    assert [p.name for p in tmp_path.iterdir()] == [page.name]
