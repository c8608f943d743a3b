"""resume.Checkpoint and resume.computed_once: finished pieces of a long report survive an interruption; an
interrupted command says what it kept."""

import json
import math
import os
import signal
import subprocess
import sys

import pytest
from click.testing import CliRunner

from attnphase.cli import main
from attnphase.resume import Checkpoint


def test_pieces_are_read_back_with_nan_for_non_finite(tmp_path):
    path = tmp_path / "pieces.json"
    first = Checkpoint(path)
    assert first.get("omega=0.1") is None
    first.put("omega=0.1", {"alpha_c": 0.7515, "alpha_c_error": 0.0008, "alpha_l": float("nan"), "status": "converged"})
    reopened = Checkpoint(path).get("omega=0.1")
    assert reopened["alpha_c"] == 0.7515 and reopened["status"] == "converged"
    assert math.isnan(reopened["alpha_l"])
    assert not list(tmp_path.glob("*.partial"))
    # nested pieces (a branch per key, a list of values) come back with NaN at every depth too
    first.put("alpha=0.5", {"semantic": {"q": float("nan"), "status": "not_found"}, "rungs": [1.0, float("inf")]})
    nested = Checkpoint(path).get("alpha=0.5")
    assert math.isnan(nested["semantic"]["q"]) and nested["semantic"]["status"] == "not_found"
    assert nested["rungs"][0] == 1.0 and math.isnan(nested["rungs"][1])


def test_a_kill_between_pieces_keeps_every_finished_piece(tmp_path):
    """A process that stores pieces and is SIGKILLed: every piece stored before the kill is there."""
    path = tmp_path / "pieces.json"
    code = (
        "import sys, time\n"
        "from attnphase.resume import Checkpoint\n"
        f"c = Checkpoint({str(path)!r})\n"
        "for i in range(10**6):\n"
        "    c.put(f'piece {i}', {'value': float(i)})\n"
        "    print(i, flush=True)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    announced = [int(process.stdout.readline()) for _ in range(50)]
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    process.stdout.close()
    stored = Checkpoint(path)
    for i in announced:
        assert stored.get(f"piece {i}") == {"value": float(i)}


def test_a_checkpoint_of_another_code_version_is_ignored(tmp_path, monkeypatch):
    """Pieces computed by other code are never reused: the file records its code version."""
    import attnphase.resume as resume

    path = tmp_path / "pieces.json"
    Checkpoint(path).put("omega=0.1", {"alpha_c": 0.75})
    assert Checkpoint(path).get("omega=0.1") == {"alpha_c": 0.75}
    monkeypatch.setattr(resume, "code_version", lambda: "0.1.0+src.otherversion")
    stale = Checkpoint(path)
    assert stale.get("omega=0.1") is None
    stale.put("omega=0.2", {"alpha_c": 0.8})  # the first put replaces the old version's file
    assert json.loads(path.read_text()) == {"version": "0.1.0+src.otherversion",
                                            "entries": {"omega=0.2": {"alpha_c": 0.8}}}


def test_a_checkpoint_in_the_old_unversioned_format_is_ignored(tmp_path):
    path = tmp_path / "pieces.json"
    path.write_text(json.dumps({"omega=0.1": {"alpha_c": 0.75}}))
    assert Checkpoint(path).get("omega=0.1") is None


def test_an_unreadable_checkpoint_is_set_aside_with_a_warning_and_recomputed(tmp_path, capsys):
    """A truncated checkpoint (a full disk, a copy cut short) does not stop the run: the file is renamed, not
    deleted, one line on stderr names it, and the pieces are computed again into a new file."""
    path = tmp_path / "checkpoint.json"
    Checkpoint(path).put("omega=0.1", {"alpha_c": 0.75, "note": "x" * 200})
    whole = path.read_text()
    path.write_text(whole[: len(whole) // 2])
    checkpoint = Checkpoint(path)
    warning = capsys.readouterr().err
    aside = tmp_path / "checkpoint.json.unreadable"
    assert warning.count("\n") == 1 and warning.startswith(f"warning: checkpoint {path} could not be read")
    assert str(aside) in warning
    assert aside.read_text() == whole[: len(whole) // 2] and not path.exists()
    assert checkpoint.get("omega=0.1") is None
    checkpoint.put("omega=0.1", {"alpha_c": 0.75})
    assert Checkpoint(path).get("omega=0.1") == {"alpha_c": 0.75} and capsys.readouterr().err == ""
    path.write_bytes(b"\xff\xfe not json")  # a second damaged file does not overwrite the first one set aside
    assert Checkpoint(path).get("omega=0.1") is None
    assert (tmp_path / "checkpoint.json.unreadable-2").read_bytes() == b"\xff\xfe not json"
    assert aside.read_text() == whole[: len(whole) // 2]


def _nested_result():
    """What the reproduce pipelines keep: nested dicts and lists of arrays, NaN, None, tuples, mpmath
    numbers, enums, and frozen dataclasses of the package (one inside another's dict field)."""
    import mpmath
    import numpy as np

    from attnphase.numeric.mcmc import summarize_chains
    from attnphase.results import Status
    from attnphase.store import StoredPoint

    chains = np.random.default_rng(1).standard_normal((2, 64))
    with mpmath.workdps(40):
        p_star = mpmath.mpf(2) ** mpmath.mpf("0.5")  # 40 digits, more than a float holds
    return {
        "points": [
            {"P": 40.0, "c_trace": chains[0], "G_mean": np.arange(6, dtype=np.float32).reshape(2, 3),
             "barrier": None, "sem": float("nan"), "accepted": np.array([True, False])},
            {"P": 80, "c_trace": chains[1], "window": (1.5, float("inf")), "order": Status.NOT_FOUND},
        ],
        "summary": summarize_chains(chains),
        "stored": StoredPoint(model="demo", params={"beta": 1.5}, version="v", result={"inner": summarize_chains(chains)},
                              created=0.0, elapsed=None),
        "P_star": p_star,
        "complex": 1 - 2j,
        "numpy_scalar": np.float32(0.1),
        "index": {(8, 4): "L, V key", 3: "int key"},
        "empty": [],
    }


def _assert_same(a, b):
    """Equality that treats NaN as equal to NaN and compares arrays element-wise with their dtypes."""
    import dataclasses

    import numpy as np

    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            _assert_same(getattr(a, f.name), getattr(b, f.name))
    else:
        assert a == b


def test_computed_once_reads_back_an_equal_object_from_json_and_npz(tmp_path):
    """The first call computes and stores; later calls return an equal object without computing. The
    files are JSON and npz, never a pickle; the suffix of the given path is replaced."""
    from attnphase.resume import computed_once

    path = tmp_path / "simulations" / "chains.pickle"
    calls = []

    def compute():
        calls.append(1)
        return _nested_result()

    first = computed_once(path, compute)
    again = computed_once(path, compute)
    assert len(calls) == 1
    _assert_same(again, first)
    assert again["P_star"] == first["P_star"] and again["P_star"] != float(first["P_star"])  # all 40 digits
    written = sorted(p.name for p in (tmp_path / "simulations").iterdir())
    assert written == ["chains.json", "chains.npz"]
    for p in (tmp_path / "simulations").iterdir():
        assert not p.read_bytes().startswith(b"\x80")  # no pickle stream
    import numpy as np

    with np.load(tmp_path / "simulations" / "chains.npz", allow_pickle=False) as arrays:
        assert len(arrays.files) == 4  # two traces, G_mean, accepted


def test_computed_once_survives_an_interruption(tmp_path):
    """A computation interrupted before it returns leaves nothing behind, so the next call computes again."""
    import pytest

    from attnphase.resume import computed_once

    path = tmp_path / "pieces" / "chains.json"

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        computed_once(path, interrupted)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]
    assert computed_once(path, lambda: {"x": 1}) == {"x": 1}


def test_computed_once_recomputes_what_another_code_version_or_a_changed_file_wrote(tmp_path, monkeypatch):
    import numpy as np

    import attnphase.resume as resume

    path = tmp_path / "run.json"
    calls = []

    def compute():
        calls.append(1)
        return {"trace": np.arange(3.0) + len(calls)}

    resume.computed_once(path, compute)
    monkeypatch.setattr(resume, "code_version", lambda: "0.1.0+src.otherversion")
    assert resume.computed_once(path, compute)["trace"][0] == 2.0 and len(calls) == 2
    assert resume.computed_once(path, compute)["trace"][0] == 2.0 and len(calls) == 2  # now stored for it
    np.savez(tmp_path / "run.npz", a0=np.zeros(3))  # arrays replaced behind the JSON's back: checksum differs
    assert resume.computed_once(path, compute)["trace"][0] == 3.0 and len(calls) == 3


def test_stored_files_never_import_code_outside_the_package(tmp_path):
    """A JSON file naming a class outside attnphase is not rebuilt (it is recomputed), and a result holding
    an object the codec cannot rebuild exactly is refused before anything is written."""
    import pytest

    import attnphase.resume as resume
    from attnphase.version import code_version

    path = tmp_path / "evil.json"
    path.write_text(json.dumps({"format": resume.COMPUTED_ONCE_FORMAT, "version": code_version(), "arrays": None,
                                "arrays_sha256": None,
                                "value": {"__dataclass__": "subprocess:Popen", "fields": {"args": "touch pwned"}}}))
    assert resume.computed_once(path, lambda: {"safe": True}) == {"safe": True}
    assert not (tmp_path / "pwned").exists() and "subprocess" not in path.read_text()

    class Foreign:
        pass

    with pytest.raises(TypeError, match="without pickle"):
        resume.computed_once(tmp_path / "foreign.json", lambda: {"x": Foreign()})
    assert not (tmp_path / "foreign.json").exists()


def test_an_interrupted_sweep_says_what_it_kept(tmp_path, monkeypatch):
    """Ctrl-C: exit 130, and the message says where the finished points are, how many there are, and that the same
    command goes on; the interrupted JSON object carries the store and the counts too."""
    import attnphase.cli.sweep as sweep_cli
    from attnphase.sweep import SweepReport

    store = str(tmp_path / "s.sqlite")

    def interrupted_after_three_points(*args, on_start, **kwargs):
        on_start(SweepReport(model="demo", target="", grid={}, base={}, n_points=10, n_cached=4, n_computed=3,
                             store=store))
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_cli, "run_sweep", interrupted_after_three_points)
    result = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=1:2:10", "--store", store, "--json"])
    message = (f"interrupted: 3 points finished by this run are in the store {store} (7 of the grid's 10); the same "
               "command computes the rest")
    assert result.exit_code == 130 and result.stderr == message + "\n"
    payload = json.loads(result.stdout)
    assert payload["message"] == message and payload["store"] == store
    assert (payload["n_points"], payload["n_cached"], payload["n_computed"]) == (10, 4, 3)

    def interrupted_at_once(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_cli, "run_sweep", interrupted_at_once)
    result = CliRunner().invoke(main, ["sweep", "demo", "--grid", "beta=1,2", "--store", store])
    assert result.exit_code == 130
    assert result.stderr == (f"interrupted: no point finished in this run (the store is {store}); the same command "
                             "computes them\n")


def test_the_tally_counts_the_pieces_read_back_and_those_of_other_code_left_unused(tmp_path, monkeypatch):
    """What `reproduce` says per model of a resumed run: the kept pieces read back, and those kept by another code
    version and so computed again (every change of the code drops them all, which the run said nowhere). A piece
    this process kept and reads again is not counted (a fresh `make demo` said it read back its 16 sweep points);
    `_kept_here` is cleared below as a new process would start."""
    import numpy as np

    import attnphase.resume as resume
    from attnphase.cli.reproduce import reuse_text

    resume.take_tally()  # what the tests before this one read back
    checkpoint = Checkpoint(tmp_path / "pieces.json")
    checkpoint.put("a", {"x": 1.0})
    checkpoint.put("b", {"x": 2.0})
    resume.computed_once(tmp_path / "run.json", lambda: {"trace": np.arange(3.0)})
    assert checkpoint.get("a") == {"x": 1.0} and resume.read_kept(tmp_path / "run.json") is not None
    assert resume.take_tally() == {"read_back": 0, "other_version": 0}  # kept by this process: nothing reused
    monkeypatch.setattr(resume, "_kept_here", set())  # a later process
    again = Checkpoint(tmp_path / "pieces.json")
    assert again.get("a") == {"x": 1.0} and again.get("a") == {"x": 1.0} and again.get("missing") is None
    resume.computed_once(tmp_path / "run.json", lambda: {"trace": np.zeros(3)})
    counts = resume.take_tally()  # each piece once
    assert counts == {"read_back": 2, "other_version": 0}
    assert reuse_text(counts) == "read back 2 pieces kept by an earlier run"
    monkeypatch.setattr(resume, "code_version", lambda: "0.1.0+src.otherversion")
    assert Checkpoint(tmp_path / "pieces.json").get("a") is None
    resume.computed_once(tmp_path / "run.json", lambda: {"trace": np.zeros(3)})
    counts = resume.take_tally()
    assert counts == {"read_back": 0, "other_version": 3} and resume.take_tally() == counts | {"other_version": 0}
    assert reuse_text(counts) == ("read back 0 pieces kept by an earlier run; 3 kept by other code not used "
                                  "(computed again)")


def test_an_interrupted_atomic_write_leaves_the_earlier_file_and_no_sibling(tmp_path, monkeypatch):
    """`write_json_atomically` (checkpoints, kept pieces) interrupted while it writes: the earlier file is intact and
    the half-written sibling is removed (it was left behind as a stray `*.partial` file)."""
    from pathlib import Path

    from attnphase.resume import write_json_atomically

    path = tmp_path / "checkpoint.json"
    write_json_atomically(path, {"finished": [1, 2]})
    real_write_text = Path.write_text

    def write_some_then_stop(target, text, *args, **kwargs):
        real_write_text(target, text[:5], *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", write_some_then_stop)
    with pytest.raises(KeyboardInterrupt):
        write_json_atomically(path, {"finished": [1, 2, 3]})
    monkeypatch.undo()
    assert json.loads(path.read_text()) == {"finished": [1, 2]} and [p.name for p in tmp_path.iterdir()] == [path.name]


def test_a_sibling_left_by_a_killed_writer_is_removed_by_the_next_write_and_a_running_ones_is_kept(tmp_path):
    """A process killed (SIGKILL) while it wrote leaves its `<name>.<pid>.partial` sibling: it cannot remove it. The
    next write of the same file removes it; the sibling of a process that still runs (a write in progress) stays."""
    import signal
    import subprocess

    from attnphase.resume import write_json_atomically

    path = tmp_path / "checkpoint.json"
    writer = subprocess.Popen([sys.executable, "-c", f"""
import sys, time
from pathlib import Path
Path({str(path)!r} + ".%d.partial" % __import__("os").getpid()).write_text('{{"finished": [1')
print("written", flush=True)
time.sleep(60)
"""], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline() == "written\n"
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        in_progress = tmp_path / f"checkpoint.json.{running.pid}.partial"
        in_progress.write_text("{")
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=10)
        left = tmp_path / f"checkpoint.json.{writer.pid}.partial"
        assert left.exists()
        write_json_atomically(path, {"finished": [1, 2]})
        assert not left.exists() and in_progress.exists()
        assert json.loads(path.read_text()) == {"finished": [1, 2]}
    finally:
        running.kill()
        running.wait(timeout=10)
        writer.stdout.close()


def test_an_empty_checkpoint_dir_is_refused_before_anything_is_computed(tmp_path, monkeypatch):
    """Audit b17 L4: `positional_semantic.threshold(checkpoint_dir='')` kept its pieces in the working directory,
    where the CLI refuses an empty --checkpoint-dir."""
    from attnphase.api import positional_semantic as ps
    from attnphase.errors import ParameterError

    monkeypatch.chdir(tmp_path)
    for empty in ("", "  "):
        with pytest.raises(ParameterError, match="checkpoint_dir.*not empty"):
            ps.threshold(0.3, checkpoint_dir=empty)
        with pytest.raises(ParameterError, match="checkpoint_dir.*not empty"):
            ps.phase_curve([0.3], checkpoint_dir=empty)
    assert not any(tmp_path.iterdir())


def test_a_sibling_of_another_users_process_and_a_file_whose_name_globs_are_left_alone(tmp_path, monkeypatch):
    """The sibling of a process that runs under another user (os.kill raises PermissionError) is that process's write
    in progress; and a name with glob characters ("[ab].json") matches its own siblings only, not a.json's (audit
    t18 M27, M28)."""
    from attnphase import resume

    other_users = tmp_path / "f.json.424242.partial"
    other_users.write_text("{")
    not_mine = tmp_path / "a.json.999999999.partial"  # a process that has ended, of another file
    not_mine.write_text("{")

    def kill(pid, signal_number):
        if pid == 424242:
            raise PermissionError
        raise ProcessLookupError

    monkeypatch.setattr(resume.os, "kill", kill)
    resume.write_json_atomically(tmp_path / "f.json", {"a": 1})
    resume.write_json_atomically(tmp_path / "[ab].json", {"a": 1})
    assert other_users.exists() and not_mine.exists()


@pytest.mark.parametrize("write", ["kept arguments", "kernel cache"])
def test_a_write_that_fails_leaves_the_earlier_file_and_no_sibling(tmp_path, monkeypatch, write):
    """The kept arguments of a computation and the kernel cache are written through `written_atomically` (audit t18
    M29, M30): a write that fails half-way (a full disk) leaves the earlier file whole and no sibling."""
    from pathlib import Path

    from attnphase.derive import codegen
    from attnphase.errors import ParameterError
    from attnphase.resume import kept_directory

    real_write_text = Path.write_text
    if write == "kept arguments":
        directory = kept_directory(tmp_path, "demo", {"x": 1})
        target, earlier = directory / "arguments.json", (directory / "arguments.json").read_text()
    else:
        target, earlier = tmp_path / "kernel.py", "old"
        target.write_text(earlier)

    def fill_the_disk(path, text, *args, **kwargs):
        real_write_text(path, text[:3], *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", fill_the_disk)
    with pytest.raises((OSError, ParameterError)):
        if write == "kept arguments":
            kept_directory(tmp_path, "demo", {"x": 1})
        else:
            codegen._write_atomic(target, "new content")
    monkeypatch.undo()
    assert target.read_text() == earlier and not list(target.parent.glob("*.partial"))
