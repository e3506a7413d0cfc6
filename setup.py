"""Build only: the compiled executables (hook, status line, drain) and optional extensions.

Metadata lives in pyproject.toml.  What this adds to a plain setuptools build:

- ``EXECUTABLES``: ``aipager-hook`` and ``aipager-statusline`` (from
  ``_fasthook/hook.pyx``) and ``aipager-drain`` (from ``_fasthook/drain_exe.pyx``:
  the daemon's ingest drain, the ``drainloop.pxi`` loop ``aipager._drain_c``
  also wraps, with ``drain.py``'s salvage in C; its watcher thread links
  ``-pthread``): Cython ``noexcept nogil`` code from ``_fasthook/`` plus
  ``_fasthook/main.c``, compiled with ``-ffunction-sections -fdata-sections``
  and linked with ``--gc-sections`` and NO libpython, into glibc-only ELF
  files that pip installs verbatim on PATH (the link fails if anything
  reachable needs CPython: that is the guard).  Each binary is self-tested
  before it is accepted, and a failure of any one is a failure of all.
- ``build/generated/``: headers written from the Python sources before
  anything compiles (``write_generated``): ``policy_literals.h`` (the policy's
  patterns, lists and reasons) and ``wire_constants.h`` (``WIRE_CONSTANTS``:
  datagram and reply sizes, event and datagram names, socket and spool names,
  limits, the reply waits' deadlines and their variables, the drain's backlog cap
  and pipe size).  The C side never copies a Python value by hand.  They are build
  output, never committed; a build from an sdist writes them from its own
  Python files.
- Without a working compiler (or with ``AIPAGER_NO_EXTENSIONS=1``) the hook
  and status line are installed as pure-Python twin scripts
  (``aipager.hookpy``): same behaviour, slower.  ``aipager-drain`` has no twin
  script and is then not installed: the daemon runs ``python -I -S
  aipager/daemon/drain.py`` instead (``aipager.daemon.ingest``).
  ``AIPAGER_REQUIRE_NATIVE=1`` turns a failed native build into an install
  error (CI sets it).  That is the install-time side of the
  one switch ``aipager/native.py`` reads; at run time the same variable sends
  the matcher and the drain to their Python twins (see there).
- ``aipager/hookpy/_hot.bin``: the twins' hot-path modules compiled into one
  marshalled file (``aipager.hookpy.hot``), so stage 2 starts faster.
- ``aipager/locales/*/LC_MESSAGES/aipager.mo``: the chat's translations, compiled
  with Babel from the ``.po`` sources (``compile_catalogs``); never committed.
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
#: executable name -> (twin entry argument, or None: no twin script; main.c macro; the
#: _fasthook .pyx linked with main.c)
EXECUTABLES = {
    "aipager-hook": ("hook", None, "hook.pyx"),
    "aipager-statusline": ("statusline", "AIPAGER_STATUSLINE", "hook.pyx"),
    # no twin: without a native build the daemon runs ``python -I -S drain.py`` instead
    "aipager-drain": (None, "AIPAGER_DRAIN", "drain_exe.pyx"),
}
_NATIVE = {"built": False}


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


def native_switched_off() -> bool:
    """``AIPAGER_NO_EXTENSIONS`` as ``aipager/native.py`` reads it at run time (the same
    function, run from the source tree): one switch, one spelling of "on"."""
    return _package_module("aipager/native.py")["disabled"]()


#: headers setup.py writes from the Python sources before anything compiles
GENERATED = os.path.join(HERE, "build", "generated")

#: the numbers and names the compiled side shares with Python: C name -> the
#: "module:ATTRIBUTE" it is generated from (wire_constants.h; _fasthook/wire.pxi
#: declares each).  A value lives in Python only: change it there and rebuild.
WIRE_CONSTANTS = {
    "WIRE_MAX_DATAGRAM": "aipager.proto.wire:MAX_DATAGRAM",
    "WIRE_RECV_MAX": "aipager.proto.wire:RECV_MAX",
    "WIRE_REPLY_MAX": "aipager.proto.wire:REPLY_MAX",
    "WIRE_MAX_BRACKETS": "aipager.proto.wire:MAX_BRACKETS",
    "WIRE_QUEUE_PICKUP": "aipager.proto.wire:QUEUE_PICKUP",
    "WIRE_SAFETY_BLOCKED": "aipager.proto.wire:SAFETY_BLOCKED",
    "WIRE_SEND_FILES_REFUSED": "aipager.proto.wire:SEND_FILES_REFUSED",
    "WIRE_PERMISSION_REPLY_TIMEOUT": "aipager.proto.wire:PERMISSION_REPLY_TIMEOUT",
    "WIRE_STATUSLINE": "aipager.proto.wire:STATUSLINE",
    "WIRE_HOOK_MEMORY_CAP_HIT": "aipager.proto.wire:HOOK_MEMORY_CAP_HIT",
    "WIRE_REPORT_ERROR": "aipager.proto.wire:REPORT_ERROR",
    "REPLY_DEFAULT_MS": "aipager.hookpy.reply:DEFAULT_MS",
    "REPLY_MIN_MS": "aipager.hookpy.reply:MIN_MS",
    "REPLY_MAX_MS": "aipager.hookpy.reply:MAX_MS",
    "REPLY_SUN_PATH_MAX": "aipager.hookpy.reply:SUN_PATH_MAX",
    "REPLY_PERMISSION_VAR": "aipager.hookpy.reply:PERMISSION_VAR",
    "REPLY_ELICITATION_VAR": "aipager.hookpy.reply:ELICITATION_VAR",
    "REPLY_ELICITATION_DEFAULT_MS": "aipager.hookpy.reply:ELICITATION_DEFAULT_MS",
    "REPLY_ELICITATION_MAX_MS": "aipager.hookpy.reply:ELICITATION_MAX_MS",
    "HOOK_STATUS_MAX": "aipager.hookpy.hook:STATUS_MAX",
    "COMMON_MEMORY_CAP": "aipager.hookpy.common:MEMORY_CAP",
    "SPOOLFILE_TRIES": "aipager.proto.spoolfile:TRIES",
    "PATHS_SOCKET_NAME": "aipager.proto.paths:SOCKET_NAME",
    "PATHS_SPOOL_NAME": "aipager.proto.paths:SPOOL_NAME",
    "PATHS_REPLY_PREFIX": "aipager.proto.paths:REPLY_PREFIX",
    "PATHS_SESSION_PREFIX": "aipager.proto.paths:SESSION_PREFIX",
    "PATHS_PRIVATE_PREFIX": "aipager.proto.paths:PRIVATE_PREFIX",
    "DRAIN_MAX_BACKLOG": "aipager.daemon.drain:MAX_BACKLOG",
    "DRAIN_PIPE_SIZE": "aipager.daemon.drain:PIPE_SIZE",
    "FSIO_MAX_READ": "aipager.proto.fsio:MAX_READ",
    "MARKER_MAX_MARKER": "aipager.policy.marker:MAX_MARKER",
    "MARKER_TTL_SECONDS": "aipager.policy.marker:TTL_SECONDS",
    "NOTES_TTL_SECONDS": "aipager.policy.notes:TTL_SECONDS",
    "SENDFILE_MAX_BYTES": "aipager.policy.sendfile:MAX_BYTES",
}
#: where wire_constants.h's stamp starts (in the hook executables and aipager._policy_c)
WIRE_STAMP_PREFIX = "aipager-wire:"


def _c_string(text: str) -> str:
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in '\\"':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:  # three octal digits: the next character can never extend the escape
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _c_value(value) -> str:
    if isinstance(value, str):
        return _c_string(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value) if -(2**31) <= value < 2**31 else f"{value}LL"
    msg = f"no C spelling for {value!r}"
    raise TypeError(msg)


def _plain(value):
    """``value`` as JSON has it: tuples as lists, sets as sorted lists (the stamp's form)."""
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _snake(name: str) -> str:
    """PreToolUse -> PRE_TOOL_USE."""
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(name)).upper()


def _from_source(*modules: str) -> dict:
    """Import ``modules`` from this source tree (never an installed aipager); name -> module."""
    import importlib

    saved_path = list(sys.path)
    saved = {k: v for k, v in sys.modules.items() if k == "aipager" or k.startswith("aipager.")}
    for name in saved:
        del sys.modules[name]
    sys.path.insert(0, HERE)
    try:
        return {name: importlib.import_module(name) for name in modules}
    finally:
        sys.path[:] = saved_path
        for name in [k for k in sys.modules if k == "aipager" or k.startswith("aipager.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def policy_literals_h() -> str:
    """``policy_literals.h``: the literals ``match.pxi``, ``floor.pxi``, ``hookside.pxi``,
    ``sendfile.pxi`` and ``marker.pxi`` share with the Python policy.

    The twin is the reference: the C side gets its floor command patterns, their needles,
    the send floor's lists, the deny reasons and the model-switch answer from the Python
    values, never from a hand-escaped copy.
    """
    mods = _from_source("aipager.policy._match_py", "aipager.policy.floor", "aipager.policy.hookside",
                        "aipager.policy.sendfile", "aipager.policy.marker")
    _match_py, floor, hookside, sendfile, marker = mods.values()
    literals = {
        "POL_REASON_HALTED": _match_py.REASON_HALTED,
        "POL_SAFETY_PREFIX": hookside.SAFETY_PREFIX,
        "POL_REASON_UNUSABLE": hookside.REASON_UNUSABLE,
        "POL_ENCODED_PREFIX": hookside.ENCODED_PREFIX,
        "POL_FLOOR_COMMANDS": json.dumps(list(floor.FLOOR_COMMANDS), separators=(",", ":")),
        "POL_FLOOR_NEEDLES": json.dumps([floor.KNOWN_NEEDLES[(p, False)] for p in floor.FLOOR_COMMANDS],
                                        separators=(",", ":")),
        "POL_FLOOR_SECRETS": json.dumps(list(floor.SECRET_GLOBS), separators=(",", ":")),
        "POL_FLOOR_NO_WRITE": json.dumps(list(floor.PROJECT_NO_WRITE), separators=(",", ":")),
        # floor.own_uploads: the files folder's command pattern and a person's folder
        "POL_FILES_COMMAND": floor.FILES_COMMAND,
        "POL_UPLOADS_PREFIX": floor.paths.UPLOADS_PREFIX,
        # sendfile.pxi: its lists as JSON and its reasons as printf formats
        "SF_SECRET_NAMES": json.dumps(list(sendfile.SECRET_NAMES), separators=(",", ":")),
        "SF_SEND_GLOBS": json.dumps(list(sendfile.SEND_GLOBS), separators=(",", ":")),
        "SF_REASON_PROTECTED": sendfile.REASON_PROTECTED,
        "SF_REASON_OTHER_HOME": sendfile.REASON_OTHER_HOME,
        "SF_REASON_SECRET_NAME": sendfile.REASON_SECRET_NAME,
        "SF_REASON_TASK_RULES": sendfile.REASON_TASK_RULES,
        "SF_REASON_OUTSIDE": sendfile.REASON_OUTSIDE,
        "SF_REASON_NO_FOLDER": sendfile.REASON_NO_FOLDER,
        # marker.pxi: what PreModelSwitch prints when it allows
        "MK_ALLOW": marker.allow_output(),
    }
    lines = ["/* generated by setup.py from aipager/policy (floor.py, hookside.py, _match_py.py,",
             "   sendfile.py, marker.py): do not edit; match.pxi, sendfile.pxi and marker.pxi declare these */"]
    lines += [f"static const char {name}[] = {_c_string(value)};" for name, value in literals.items()]
    return "\n".join(lines) + "\n"


def wire_values() -> dict:
    """Every Python value ``wire_constants.h`` is generated from: "module:ATTRIBUTE" -> value
    (as JSON has it).  The header's stamp holds exactly this; the tests compare it with
    the installed Python."""
    sources = list(WIRE_CONSTANTS.values()) + [
        "aipager.proto.wire:HOOK_EVENTS", "aipager.proto.wire:NOT_FORWARDED", "aipager.proto.wire:NO_SL_TOKENS",
        "aipager.proto.wire:SL_TOKEN_KEYS", "aipager.hookpy.common:STATUS_PATHS",
        "aipager.hookpy.axcode:TOOL_EVENTS", "aipager.hookpy.axcode:TOOL_NAMES",
        "aipager.hookpy.axcode:REFUSED",
    ]
    mods = _from_source(*dict.fromkeys(source.split(":")[0] for source in sources))
    return {source: _plain(getattr(mods[source.split(":")[0]], source.split(":")[1])) for source in sources}


def _fields(name: str, keys, paths: dict) -> list:
    """A table of JSON object members: ``{before, path}`` per key, ``before`` the text up to
    the value (a comma first, but for the first member) and ``path`` the dotted path of
    the value in Claude Code's status JSON (json.pxi js_find_path)."""
    rows = [f"static const wire_field {name}[] = {{"]
    for i, key in enumerate(keys):
        before = ("," if i else "") + json.dumps(key) + ":"
        rows.append(f"    {{{_c_string(before)}, {_c_string('.'.join(paths[key]))}}},")
    rows += ["};", f"#define {name}_N {len(keys)}"]
    return rows


def wire_constants_h() -> str:
    """``wire_constants.h``: the sizes, limits, event and datagram names and field tables
    the compiled hook and drain share with Python (``WIRE_CONSTANTS`` and the tables
    below), plus ``WIRE_STAMP``: all of them as JSON, for the tests."""
    values = wire_values()
    for source in ("aipager.proto.wire:NOT_FORWARDED", "aipager.proto.wire:NO_SL_TOKENS"):
        if len(values[source]) != 1:
            msg = f"{source} must name one event: forward.pxi compares with WIRE_{source.split(':')[1]}"
            raise RuntimeError(msg)
    lines = [
        "/* generated by setup.py from aipager/proto/wire.py and the hook-side modules named below:",
        "   do not edit; _fasthook/wire.pxi declares these */",
        "#ifndef AIPAGER_WIRE_CONSTANTS_H",
        "#define AIPAGER_WIRE_CONSTANTS_H",
        "",
    ]
    for name, source in WIRE_CONSTANTS.items():
        lines.append(f"#define {name} {_c_value(values[source])}  /* {source} */")
    lines.append("/* aipager.proto.wire:HOOK_EVENTS, NOT_FORWARDED, NO_SL_TOKENS */")
    lines += [f"#define WIRE_EVENT_{_snake(event)} {_c_string(event)}"
              for event in values["aipager.proto.wire:HOOK_EVENTS"]]
    lines.append(f"#define WIRE_NOT_FORWARDED {_c_string(values['aipager.proto.wire:NOT_FORWARDED'][0])}")
    lines.append(f"#define WIRE_NO_SL_TOKENS {_c_string(values['aipager.proto.wire:NO_SL_TOKENS'][0])}")
    paths = values["aipager.hookpy.common:STATUS_PATHS"]
    lines.append("/* aipager.hookpy.common:STATUS_PATHS, each as a dotted path (json.pxi js_find_path) */")
    lines += [f"#define STATUS_PATH_{key.upper()} {_c_string('.'.join(path))}" for key, path in paths.items()]
    lines += ["", "typedef struct { const char* before; const char* path; } wire_field;",
              "/* sl_tokens: aipager.proto.wire:SL_TOKEN_KEYS at aipager.hookpy.common:STATUS_PATHS */"]
    lines += _fields("WIRE_SL_TOKENS", values["aipager.proto.wire:SL_TOKEN_KEYS"], paths)
    lines.append("/* the statusline datagram after its session: all of aipager.hookpy.common:STATUS_PATHS */")
    lines += _fields("WIRE_STATUSLINE_FIELDS", list(paths), paths)
    events = values["aipager.hookpy.axcode:TOOL_EVENTS"]
    lines += ["/* aipager.hookpy.axcode:TOOL_EVENTS */",
              "static const char* const AXCODE_TOOL_EVENTS[] = {"
              + ", ".join(_c_string(e) for e in events) + "};",
              f"#define AXCODE_TOOL_EVENTS_N {len(events)}"]
    names = values["aipager.hookpy.axcode:TOOL_NAMES"]
    lines += ["/* aipager.hookpy.axcode:TOOL_NAMES, REFUSED */",
              "typedef struct { const char* ax; const char* claude; } axcode_tool_name;",
              "static const axcode_tool_name AXCODE_TOOL_NAMES[] = {"
              + ", ".join(f"{{{_c_string(k)}, {_c_string(v)}}}" for k, v in names.items()) + "};",
              f"#define AXCODE_TOOL_NAMES_N {len(names)}",
              f"#define AXCODE_REFUSED {_c_string(values['aipager.hookpy.axcode:REFUSED'])}"]
    stamp = WIRE_STAMP_PREFIX + json.dumps(values, separators=(",", ":"))
    lines += ["", "/* all of the above as JSON (main.c keeps it in the executables) */",
              f"#define WIRE_STAMP {_c_string(stamp)}", "", "#endif"]
    return "\n".join(lines) + "\n"


def write_generated() -> str:
    """Write the headers generated from the Python sources (``policy_literals.h``,
    ``wire_constants.h``) into ``GENERATED``, from the source tree's own modules; the folder.

    A header is rewritten only when it changes (an unchanged build compiles nothing again).
    """
    os.makedirs(GENERATED, exist_ok=True)
    for name, text in (("policy_literals.h", policy_literals_h()), ("wire_constants.h", wire_constants_h())):
        target = os.path.join(GENERATED, name)
        try:
            with open(target, encoding="utf-8") as fh:
                if fh.read() == text:
                    continue
        except OSError:
            pass
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text)
    return GENERATED


def generated_headers() -> list[str]:
    """The generated headers (extensions are rebuilt when one changes)."""
    return [os.path.join(GENERATED, name) for name in ("policy_literals.h", "wire_constants.h")]


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


def _self_test(hook: str, statusline: str, drain: str) -> None:
    """Run the binaries once against a real socket; raise if anything is off."""
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
        _self_test_drain(drain, sock, os.path.join(tmp, "aipager.sock"))
        sock.close()


def _self_test_drain(drain: str, sock: socket.socket, path: str) -> None:
    """The drain moves two datagrams into its pipe as frames and stops cleanly on SIGTERM."""
    import signal

    proc = subprocess.Popen([drain, str(sock.fileno())], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            pass_fds=(sock.fileno(),))
    try:
        sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        for data in (b"one", b"two"):
            sender.sendto(data, path)
        sender.close()
        want = b"\x03\x00\x00\x00one\x03\x00\x00\x00two"
        got = b""
        while len(got) < len(want):
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            got += chunk
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if got + rest != want or proc.returncode != 0:
        msg = f"aipager-drain self-test failed: exit {proc.returncode}, piped {got + rest!r}, stderr {err!r}"
        raise RuntimeError(msg)


def build_native(build_temp: str, out_dir: str) -> list[str]:
    """Compile and link the executables (``EXECUTABLES``) into out_dir; their paths."""
    from distutils.ccompiler import new_compiler
    from distutils.sysconfig import customize_compiler

    os.makedirs(build_temp, exist_ok=True)
    os.makedirs(out_dir, exist_ok=True)
    compiler = new_compiler()
    customize_compiler(compiler)
    debug = _flag("AIPAGER_DEBUG_BUILD")
    opt = ["-O0", "-g"] if debug else ["-O2"]
    sections = ["-ffunction-sections", "-fdata-sections"]
    objects = {}
    for source in dict.fromkeys(pyx for _which, _macro, pyx in EXECUTABLES.values()):
        c_file = os.path.join(build_temp, source[:-len(".pyx")] + ".c")
        # generated C stays in the build folder: never next to the sources
        subprocess.run(
            [sys.executable, "-m", "cython", "-3", os.path.join(FASTHOOK, source), "-o", c_file],
            check=True,
        )
        objects[source] = compiler.compile(
            [c_file],
            output_dir=build_temp,
            include_dirs=[sysconfig.get_paths()["include"], FASTHOOK, write_generated()],
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
    for name, (_which, macro, source) in EXECUTABLES.items():
        macros = baked + ([(macro, "1")] if macro else [])
        main_obj = compiler.compile(
            [os.path.join(FASTHOOK, "main.c")],
            output_dir=os.path.join(build_temp, name),
            macros=macros,
            include_dirs=[GENERATED],
            extra_postargs=opt,
        )
        # no libpython on purpose: a reachable CPython symbol fails this link.  The
        # wire stamp is referenced by nothing: --undefined keeps it for the tests.
        # -pthread: the drain's salvage watcher is a thread (in libc itself since glibc 2.34).
        compiler.link_executable(
            main_obj + objects[source], name, output_dir=out_dir,
            extra_postargs=(["-pthread"] if name == "aipager-drain" else [])
            + ["-Wl,--gc-sections,--undefined=aipager_wire_stamp"] + ([] if debug else ["-s"]),
        )
        built.append(os.path.join(out_dir, name))
    _self_test(*built)
    return built


def write_twins(out_dir: str) -> list[str]:
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name, (which, _macro, _source) in EXECUTABLES.items():
        if which is None:
            continue  # aipager-drain has no twin script: the daemon runs drain.py instead
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
        # An earlier build's executable that this build did not produce (aipager-drain
        # has no twin) must not be installed from the reused build folder.
        produced = {os.path.basename(path) for path in self.scripts}
        for name in EXECUTABLES:
            stale = os.path.join(self.build_dir, name)
            if name not in produced and os.path.lexists(stale):
                os.unlink(stale)
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
        if native_switched_off():
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


def compile_catalogs(build_lib: str) -> list[str]:
    """The chat's translations (``aipager/locales/<locale>/LC_MESSAGES/*.po``) compiled with
    Babel into the ``.mo`` files aiogram's i18n reads, next to where the build puts the
    package; a fuzzy entry is left out (its English msgid shows instead)."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    written = []
    source = os.path.join(HERE, "aipager", "locales")
    for locale in sorted(os.listdir(source)):
        folder = os.path.join(source, locale, "LC_MESSAGES")
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".po"):
                continue
            with open(os.path.join(folder, name), "rb") as fh:
                catalog = read_po(fh, locale=locale)
            out = os.path.join(build_lib, "aipager", "locales", locale, "LC_MESSAGES")
            os.makedirs(out, exist_ok=True)
            target = os.path.join(out, name[:-3] + ".mo")
            with open(target, "wb") as fh:
                write_mo(fh, catalog)
            written.append(target)
    return written


class build_py(_build_py):
    """Also write the hook's hot-path bundle (``aipager.hookpy.hot``) and the compiled
    translations (``compile_catalogs``) into the build."""

    def run(self):
        super().run()
        compile_catalogs(self.build_lib)
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
    if native_switched_off():
        return []
    exts = [
        Extension(name, [src], include_dirs=["_fasthook", write_generated()], depends=generated_headers())
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
