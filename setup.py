"""Build only: the compiled hook executables and optional extensions.

Metadata lives in pyproject.toml.  What this adds to a plain setuptools build:

- ``aipager-hook`` and ``aipager-statusline``: Cython ``noexcept nogil`` code
  from ``_fasthook/`` plus ``_fasthook/main.c``, compiled with
  ``-ffunction-sections -fdata-sections`` and linked with ``--gc-sections``
  and NO libpython, into glibc-only ELF files that pip installs verbatim on
  PATH (the link fails if anything reachable needs CPython: that is the guard).
  Each binary is self-tested before it is accepted.
- Without a working compiler (or with ``AIPAGER_NO_EXTENSIONS=1``) the same
  names are installed as pure-Python twin scripts (``aipager.hookpy``): same
  behaviour, slower.  ``AIPAGER_REQUIRE_NATIVE=1`` turns a failed native build
  into an install error (CI sets it).
- ``aipager/hookpy/_hot.bin``: the twins' hot-path modules compiled into one
  marshalled file (``aipager.hookpy.hot``), so stage 2 starts faster.
- ``EXTENSIONS``: importable Cython extensions; an entry whose source file is
  missing is skipped.

Knobs: ``CC``/``CFLAGS`` as usual; ``AIPAGER_DEBUG_BUILD=1`` builds -O0 -g.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile

import setuptools  # noqa: F401  (must precede the distutils imports below)
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext as _build_ext
from setuptools.command.build_py import build_py as _build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel as _bdist_wheel
except ImportError:  # setuptools < 70.1 keeps it in the wheel package
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

from distutils.command.build_scripts import build_scripts as _build_scripts  # noqa: E402

#: importable extensions (module, .pyx source); missing sources are skipped
EXTENSIONS = [
    ("aipager._policy_c", "_fasthook/policy_ext.pyx"),
    ("aipager._drain_c", "_fasthook/drain_ext.pyx"),
]

HERE = os.path.dirname(os.path.abspath(__file__))
FASTHOOK = os.path.join(HERE, "_fasthook")
#: executable name -> (twin entry argument, main.c macro)
EXECUTABLES = {
    "aipager-hook": ("hook", None),
    "aipager-statusline": ("statusline", "AIPAGER_STATUSLINE"),
}
_NATIVE = {"built": False}


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _package_module(rel: str) -> dict:
    """Run one of aipager's builtins-only modules from the source tree (no package import)."""
    import runpy

    return runpy.run_path(os.path.join(HERE, rel))


TWIN_SCRIPT = '''#!python -IS
"""{name}: the pure-Python twin (no compiler was available at install time)."""
import sys


def _find_package():
    # Under -S the site dir is not on sys.path; pip may also drop the flags.
    try:
        import aipager.hookpy.entry  # noqa: F401
        return
    except ImportError:
        pass
    version = "%d.%d" % sys.version_info[:2]
    for folder in (sys.prefix + "/lib/python" + version + "/site-packages", {purelib!r}):
        sys.path.append(folder)
        try:
            import aipager.hookpy.entry  # noqa: F401,F811
            return
        except ImportError:
            sys.path.remove(folder)
    import site

    site.main()


_find_package()
from aipager.hookpy.entry import run  # noqa: E402

run([{which!r}] + sys.argv[1:])
'''


def _self_test(hook: str, statusline: str) -> None:
    """Run both binaries once against a real socket; raise if anything is off."""
    with tempfile.TemporaryDirectory(prefix="aipager-build-") as tmp:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(os.path.join(tmp, "aipager.sock"))
        sock.settimeout(5)
        env = {"AIPAGER_INSTANCE_DIR": tmp, "CLAUDE_DTACH_SESSION": "claude-selftest", "PATH": "/usr/bin:/bin"}
        done = subprocess.run([hook], input=b'{"hook_event_name":"Stop"}', env=env, capture_output=True, timeout=30)
        got = json.loads(sock.recv(65536))
        want = {"hook_event_name": "Stop", "session": "claude-selftest"}
        if done.returncode != 0 or done.stdout or got != want:
            msg = f"aipager-hook self-test failed: exit {done.returncode}, stdout {done.stdout!r}, sent {got!r}"
            raise RuntimeError(msg)
        status = b'{"model":{"display_name":"M"},"context_window":{"used_percentage":41.5}}'
        done = subprocess.run([statusline], input=status, env=env, capture_output=True, timeout=30)
        got = json.loads(sock.recv(65536))
        if done.stdout != b"[selftest] M | 42% ctx\n" or got.get("model_name") != "M":
            msg = f"aipager-statusline self-test failed: stdout {done.stdout!r}, sent {got!r}"
            raise RuntimeError(msg)
        sock.close()


def build_native(build_temp: str, out_dir: str) -> list[str]:
    """Compile and link both executables into out_dir; their paths."""
    from distutils.ccompiler import new_compiler
    from distutils.sysconfig import customize_compiler

    os.makedirs(build_temp, exist_ok=True)
    os.makedirs(out_dir, exist_ok=True)
    c_file = os.path.join(build_temp, "hook.c")
    # generated C stays in the build folder: never next to the sources
    subprocess.run(
        [sys.executable, "-m", "cython", "-3", os.path.join(FASTHOOK, "hook.pyx"), "-o", c_file],
        check=True,
    )
    compiler = new_compiler()
    customize_compiler(compiler)
    debug = _flag("AIPAGER_DEBUG_BUILD")
    opt = ["-O0", "-g"] if debug else ["-O2"]
    sections = ["-ffunction-sections", "-fdata-sections"]
    objects = compiler.compile(
        [c_file],
        output_dir=build_temp,
        include_dirs=[sysconfig.get_paths()["include"], FASTHOOK],
        extra_postargs=opt + sections + ["-Wno-unused-function"],
    )
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    baked = [
        ("AIPAGER_BUILD_PYTHON", _c_string(sys.executable)),
        ("AIPAGER_BUILD_PYVER", _c_string(version)),
        ("AIPAGER_BUILD_PURELIB", _c_string(sysconfig.get_path("purelib"))),
        ("AIPAGER_BUILD_BOOT", _c_string(_package_module("aipager/hookpy/entry.py")["BOOT"])),
    ]
    built = []
    for name, (_which, macro) in EXECUTABLES.items():
        macros = baked + ([(macro, "1")] if macro else [])
        main_obj = compiler.compile(
            [os.path.join(FASTHOOK, "main.c")],
            output_dir=os.path.join(build_temp, name),
            macros=macros,
            extra_postargs=opt,
        )
        # no libpython on purpose: a reachable CPython symbol fails this link
        compiler.link_executable(
            main_obj + objects, name, output_dir=out_dir,
            extra_postargs=["-Wl,--gc-sections"] + ([] if debug else ["-s"]),
        )
        built.append(os.path.join(out_dir, name))
    _self_test(*built)
    return built


def write_twins(out_dir: str) -> list[str]:
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name, (which, _macro) in EXECUTABLES.items():
        path = os.path.join(out_dir, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(TWIN_SCRIPT.format(name=name, which=which, purelib=sysconfig.get_path("purelib")))
        paths.append(path)
    return paths


class build_scripts(_build_scripts):
    """Produce the executables, then copy ELF files verbatim (distutils would
    try to read a shebang encoding from them and fail)."""

    def get_source_files(self):
        return []  # generated at build time, nothing for the sdist

    def run(self):
        build = self.get_finalized_command("build")
        temp = os.path.join(build.build_temp, "aipager-exe")
        out = os.path.join(temp, "out")
        shutil.rmtree(out, ignore_errors=True)
        self.scripts = self._produce(temp, out)
        self.mkpath(self.build_dir)
        text = []
        for path in self.scripts:
            with open(path, "rb") as fh:
                is_elf = fh.read(4) == b"\x7fELF"
            if is_elf:
                target = os.path.join(self.build_dir, os.path.basename(path))
                shutil.copyfile(path, target)
                os.chmod(target, 0o755)
            else:
                text.append(path)
        self.scripts = text
        if text:
            self.copy_scripts()

    def _produce(self, temp: str, out: str) -> list[str]:
        require = _flag("AIPAGER_REQUIRE_NATIVE")
        if _flag("AIPAGER_NO_EXTENSIONS"):
            if require:
                msg = "AIPAGER_NO_EXTENSIONS=1 and AIPAGER_REQUIRE_NATIVE=1 contradict each other"
                raise SystemExit(msg)
            return write_twins(out)
        try:
            built = build_native(temp, out)
        except Exception as exc:  # noqa: BLE001 - any failure means "no native build"
            if require:
                msg = f"native aipager-hook build failed ({exc}); AIPAGER_REQUIRE_NATIVE=1 forbids the fallback"
                raise SystemExit(msg) from exc
            sys.stderr.write(
                f"warning: building the compiled aipager-hook failed ({exc}); installing the slower "
                "pure-Python twins. Install a C compiler and the Python headers (Debian: gcc python3-dev) "
                "and reinstall for the fast hook.\n"
            )
            return write_twins(out)
        _NATIVE["built"] = True
        return built


class build_py(_build_py):
    """Also write the hook's hot-path bundle (``aipager.hookpy.hot``) into the build."""

    def run(self):
        super().run()
        hot = _package_module("aipager/hookpy/hot.py")
        target = os.path.join(self.build_lib, hot["FILE"])
        data = hot["build"](self.build_lib)
        with open(target, "wb") as fh:
            fh.write(data)


class build_ext(_build_ext):
    """Optional extensions: a failure only matters with AIPAGER_REQUIRE_NATIVE=1."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001
            self._failed(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        if _flag("AIPAGER_REQUIRE_NATIVE"):
            raise exc
        sys.stderr.write(f"warning: optional extension not built ({exc})\n")


class bdist_wheel(_bdist_wheel):
    """A wheel holding ELF executables is platform-specific."""

    def get_tag(self):
        self.root_is_pure = not _NATIVE["built"] and not self.distribution.ext_modules
        return super().get_tag()


def _extensions() -> list:
    if _flag("AIPAGER_NO_EXTENSIONS"):
        return []
    exts = [
        Extension(name, [src], include_dirs=["_fasthook"])
        for name, src in EXTENSIONS
        if os.path.exists(os.path.join(HERE, src))
    ]
    if not exts:
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        if _flag("AIPAGER_REQUIRE_NATIVE"):
            raise
        return []
    return cythonize(exts, language_level=3, build_dir="build/cython")


setup(
    scripts=list(EXECUTABLES),
    ext_modules=_extensions(),
    cmdclass={"build_py": build_py, "build_scripts": build_scripts, "build_ext": build_ext,
              "bdist_wheel": bdist_wheel},
)
