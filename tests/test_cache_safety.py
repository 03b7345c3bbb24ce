"""The disk cache reads only what this user wrote, or what the configuration trusts: a
directory another user owns or can write, an entry or a shared object changed after it
was written, are refused with a warning, and the kernel is rebuilt and runs right.
Each case runs in fresh processes, as a user's program would."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pygomp.runtime import cache

PROGRAM = textwrap.dedent("""
    import numpy as np, pygomp as omp
    from pygomp.runtime import cache

    @omp.target
    def scale(x, a: float):
        for i in omp.parallel_range(x.shape[0]):
            x[i] *= a

    @omp.target
    def shift(x, a: float):
        for i in omp.parallel_range(x.shape[0]):
            x[i] += a

    x = np.arange(10.0)
    scale.on(0)(x, 3.0)
    shift.on(0)(x, 1.0)
    print(cache.stats["builds"], *x.tolist())
""")
EXPECTED = np.arange(10.0) * 3.0 + 1.0
OTHER = 65534                   # nobody
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


def run(tmp_path, cache_dir, **environ):
    """``(builds, warnings)`` of PROGRAM run on the host device, its result checked."""
    (tmp_path / "prog.py").write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "PYGOMP_"))}
    env.update(PYGOMP_DEVICES="host", PYGOMP_CACHE_DIR=str(cache_dir),
               TMPDIR=str(tmp_path / "tmp"), **environ)
    os.makedirs(tmp_path / "tmp", exist_ok=True)
    r = subprocess.run([sys.executable, str(tmp_path / "prog.py")], env=env,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    builds, *x = r.stdout.split()
    np.testing.assert_array_equal(np.array([float(v) for v in x]), EXPECTED)
    warned = [line.split("RuntimeWarning: ", 1)[1] for line in r.stderr.splitlines()
              if "RuntimeWarning: " in line]
    return int(builds), warned


def chown_all(path, uid):
    os.chown(path, uid, uid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, uid)


def image_of(directory, kernel):
    """The one file in ``directory`` that is a shared object holding ``kernel``."""
    found = [p for p in directory.iterdir() if p.is_file()
             and p.read_bytes().startswith(b"\x7fELF") and kernel.encode() in p.read_bytes()]
    assert len(found) == 1, found
    return found[0]


@needs_root
def test_a_fallback_directory_owned_by_another_user_is_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")                      # the cache dir cannot be made under it
    cache_dir = blocker / "cache"
    fallback = tmp_path / "tmp" / f"pygomp-cache-{os.geteuid()}"
    assert run(tmp_path, cache_dir)[0] == 2
    assert oct(fallback.stat().st_mode & 0o777) == "0o700"
    assert run(tmp_path, cache_dir)[0] == 0     # the fallback is kept between processes
    chown_all(fallback, OTHER)                  # as if another user had made it first
    before = sorted(os.listdir(fallback))
    builds, warned = run(tmp_path, cache_dir)
    assert builds == 2
    refused = [w for w in warned if w.startswith(f"pygomp: the kernel cache refuses "
                                                 f"{fallback}: ")]
    assert len(refused) == 1, warned
    assert f"it is owned by uid {OTHER}, not by this user (uid {os.geteuid()})" in refused[0]
    assert sorted(os.listdir(fallback)) == before       # nothing read or written there
    assert all(os.stat(fallback / n).st_uid == OTHER for n in before)


def test_a_cache_directory_others_can_write_is_refused(tmp_path):
    cache_dir = tmp_path / "cache"
    assert run(tmp_path, cache_dir)[0] == 2
    assert oct(cache_dir.stat().st_mode & 0o777) == "0o700"
    before = sorted(os.listdir(cache_dir))
    cache_dir.chmod(0o777)
    builds, warned = run(tmp_path, cache_dir)
    assert builds == 2
    fallback = tmp_path / "tmp" / f"pygomp-cache-{os.geteuid()}"
    assert f"pygomp: the kernel cache refuses {cache_dir}: group or others can write " \
           f"it (mode 0777); new entries are written to {fallback}" in warned, warned
    assert sorted(os.listdir(cache_dir)) == before
    assert any(n.endswith(".bin") for n in os.listdir(fallback))


def test_an_entry_changed_after_it_was_written_is_refused(tmp_path):
    cache_dir = tmp_path / "cache"
    assert run(tmp_path, cache_dir)[0] == 2
    scale, shift = image_of(cache_dir, "scale"), image_of(cache_dir, "shift")
    # shift's code under scale's name, with a checksum that matches it: only the
    # MAC (keyed by a secret this user alone can read) tells
    code = shift.read_bytes()[:-cache._TRAILER]
    scale.write_bytes(code + cache.MAGIC + cache.checksum(code)
                      + scale.read_bytes()[-64:])
    builds, warned = run(tmp_path, cache_dir)
    assert builds == 1                          # scale is rebuilt, shift is a hit
    assert warned == [f"pygomp: the kernel cache refuses {scale}: its MAC does not match "
                      f"(it was changed after it was written)"]
    assert run(tmp_path, cache_dir) == (0, [])  # the rebuilt entry replaced it


def test_a_shared_object_changed_after_it_was_written_is_refused(tmp_path):
    cache_dir = tmp_path / "cache"
    assert run(tmp_path, cache_dir)[0] == 2
    scale, shift = image_of(cache_dir / "lib", "scale"), image_of(cache_dir / "lib", "shift")
    good = scale.read_bytes()
    scale.write_bytes(shift.read_bytes())       # the same size: only the content tells
    builds, warned = run(tmp_path, cache_dir)
    assert builds == 0                          # written again from its checked entry
    assert warned == [f"pygomp: the kernel cache refuses {scale}: its bytes differ from "
                      f"its cache entry (it was changed after it was written)"]
    assert scale.read_bytes() == good


@needs_root
def test_a_shared_read_only_cache_is_trusted_by_configuration(tmp_path):
    site = tmp_path / "site"
    assert run(tmp_path, site)[0] == 2
    chown_all(site, OTHER)                      # the site-wide cache, another account's
    site.chmod(0o755)
    # listed in PYGOMP_CACHE_READONLY_DIRS: read, never written
    own = tmp_path / "own"
    assert run(tmp_path, own, PYGOMP_CACHE_READONLY_DIRS=str(site)) == (0, [])
    assert all(os.stat(os.path.join(r, n)).st_uid == OTHER
               for r, _, files in os.walk(site) for n in files)
    # not listed, and writable by this user (root): not trusted for where it is
    builds, warned = run(tmp_path, site)
    assert builds == 2
    assert any(w.startswith(f"pygomp: the kernel cache refuses {site}: it is owned by "
                            f"uid {OTHER}") for w in warned), warned
    # listed, but others can write it: refused all the same
    site.chmod(0o777)
    builds, warned = run(tmp_path, own, PYGOMP_CACHE_READONLY_DIRS=str(site))
    assert builds == 2
    assert f"pygomp: the kernel cache refuses {site}: group or others can write it " \
           f"(mode 0777)" in warned, warned


def test_new_directories_are_private_and_the_key_is_this_users(tmp_path, monkeypatch):
    monkeypatch.setenv("PYGOMP_CACHE_DIR", str(tmp_path / "a" / "cache"))
    k = cache.key("safety", os.getpid())
    cache.put(k, b"DATA")
    assert cache.get(k) == b"DATA"
    assert oct((tmp_path / "a" / "cache").stat().st_mode & 0o777) == "0o700"
    assert oct((tmp_path / "a" / "cache" / ".key").stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("damage", ["grown", "truncated"])
def test_a_damaged_key_is_replaced_once_and_its_entries_rebuilt(tmp_path, damage):
    cache_dir = tmp_path / "cache"
    assert run(tmp_path, cache_dir)[0] == 2
    key = cache_dir / ".key"
    old = key.read_bytes()
    key.write_bytes(old + b"\n" if damage == "grown" else old[:31])
    builds, warned = run(tmp_path, cache_dir)
    assert builds == 2                          # both entries were under the old key
    assert warned == [f"pygomp: the kernel cache refuses {key}: the key is damaged "
                      f"({len(old) + 1 if damage == 'grown' else 31} bytes, not 32); "
                      f"it is replaced, and the entries sealed under it are rebuilt"]
    assert len(key.read_bytes()) == 32 and key.read_bytes() != old
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    assert run(tmp_path, cache_dir) == (0, [])  # the rebuilt entries are hits


def test_a_key_others_can_read_is_refused_for_that_reason(tmp_path):
    cache_dir = tmp_path / "cache"
    assert run(tmp_path, cache_dir)[0] == 2
    (cache_dir / ".key").chmod(0o644)
    builds, warned = run(tmp_path, cache_dir)
    assert builds == 2
    assert f"pygomp: the kernel cache refuses {cache_dir / '.key'}: group or others can " \
           f"read the key (mode 0644)" in warned, warned


def test_processes_that_find_a_damaged_key_at_once_agree_on_its_replacement(tmp_path):
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    (d / ".key").write_bytes(b"short")
    (d / ".key").chmod(0o600)
    read = "import sys; from pygomp.runtime import cache; " \
           "print(cache._dir_key(sys.argv[1]).hex())"
    procs = [subprocess.Popen([sys.executable, "-W", "ignore", "-c", read, str(d)],
                              stdout=subprocess.PIPE, text=True) for _ in range(6)]
    keys = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert keys == {(d / ".key").read_bytes().hex()}, keys
