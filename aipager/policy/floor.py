"""The safety floor: what no task except the owner's may do.

Built in here; the owner's policy file can only add to it.  The daemon
publishes the effective floor (built-in plus additions, ``~`` expanded) to
``paths.floor_file``; the hook reads that file and falls back to the built-in
floor when it is missing, foreign or corrupt.  Builtins only (hook hot path).
"""

from __future__ import annotations

from aipager.proto import paths
from aipager.policy import rules
from aipager.proto import fsio

#: folders of aipager's own files, relative to home when XDG is not set
_SESSION_FILES = ("policy", "notes", "status", "reply", "dtach", "bgjob", "exit")

#: credential stores: in the floor in every home (SECRET_GLOBS), so no task
#: but the owner's reads them, and never sent by SendUserFile
#: (sendfile.SEND_GLOBS); the restricted roles (user, read_only) list them too
CREDENTIAL_PATHS = (
    "~/.ssh/**",
    "~/.gnupg/**",
    "~/.aws/**",
    "~/.azure/**",
    "~/.kube/**",
    "~/.docker/config.json",
    "~/.config/gh/**",
    "~/.config/gcloud/**",
    "~/.password-store/**",
    "~/.git-credentials",
    "~/.netrc",
    "~/.pgpass",
    "~/.npmrc",
    "~/.pypirc",
    "~/.local/share/keyrings/**",
    "~/.pki/**",
    "~/.oci/**",
    "~/.config/doctl/**",
    "~/.terraform.d/credentials.tfrc.json",
    "~/.s3cfg",
    "~/.boto",
    "~/.vault-token",
    "~/.cargo/credentials*",
    "~/.config/rclone/**",
)

#: the system's secrets (dialect globs: '*' also matches '/'): password hashes,
#: sudo rules, host and TLS keys; never read by a task but the owner's, never sent
SYSTEM_SECRETS = (
    "/etc/shadow*",  # password hashes and their copies (shadow-, shadow.bak)
    "/etc/gshadow*",
    "/etc/security/opasswd",  # old password hashes
    "/var/backups/*shadow*",  # Debian's daily copies
    "/etc/sudoers*",  # sudoers, sudoers.d/**
    "/etc/ssh/ssh_host_*",  # host keys
    "/etc/ssl/private/**",
    "/etc/pki/tls/private/**",
    "/etc/krb5.keytab",
    "/etc/wireguard/**",
    "/etc/NetworkManager/system-connections/**",
)

#: the homes whose credential stores the floor covers: the user's own, root's
#: and every /home/<name> ('*' also matches '/': a deeper .ssh is caught too)
HOMES = ("~", "/root", "/home/*")

#: what the floor adds so that no task but the owner's reads a secret: the
#: system's, every process's environment (the daemon's and Claude Code's hold
#: tokens), and the credential stores of every home.  Admins included: they
#: bypass their role's limits, not the floor.
SECRET_GLOBS = (
    SYSTEM_SECRETS
    + ("/proc/*/environ",)
    + tuple(home + cred[1:] for home in HOMES for cred in CREDENTIAL_PATHS)
)

#: what no task but the owner's writes in any project: files that make a program run as
#: whoever works there next.  Claude Code's project settings and MCP servers add hooks
#: and commands; git's own folder and attributes name filters, hooks and drivers that git
#: runs (``.git`` is also a file in a linked worktree, pointing git elsewhere); AX Code's
#: project folder holds its hooks.  (Dialect globs: '*' also matches '/'.)
PROJECT_NO_WRITE = (
    "*/.claude/**",
    "*/.mcp.json",
    "*/.git",
    "*/.git/**",
    "*/.gitattributes",
    "*/.gitmodules",
    "*/.ax-code/**",
)

#: tools a restricted role may not use: they run code or reach other sessions
RESTRICTED_TOOLS = (
    "bash",
    "powershell",
    "monitor",
    "repl",
    "workflow",
    "croncreate",
    "remotetrigger",
    "sendmessage",
    "enterworktree",
    "exitworktree",
    "killshell",
)

#: tools that change files (read_only also loses these)
WRITE_TOOLS = ("write", "edit", "multiedit", "notebookedit")

# Characters that cannot start or end a command word here.  '-' and '.' count
# as word characters so that "--sudo-x" or "su.txt" are not the word "su".
_B = "(^|[^A-Za-z0-9_.-])"
_E = "([^A-Za-z0-9_.-]|$)"
_HOME_ROOTS = "(~|\\$HOME|\\$\\{HOME\\}|/home|/root|/Users|/)/?(\\s|$|[;&|)])"

#: the files folder named in a command (under the runtime folder or the cache); the
#: pattern own_uploads replaces for a task of one person
FILES_COMMAND = "aipager/files"

#: command patterns (dialect regexes, case-sensitive) every restricted task gets
FLOOR_COMMANDS = (
    # privilege escalation; quotes are stripped into a second subject, so
    # s"u"do and \sudo are caught too
    _B + "(sudo|su|doas|pkexec|runuser|sudoedit)" + _E,
    # a command word that is a variable or substitution hides what runs
    "(^|[;&|(`]|\\$\\()\\s*\\$[A-Za-z_{(]",
    _B + "eval" + _E,
    # tampering with aipager, its service or its files
    _B + "aipager\\s+(service|config|setup|start|uninstall|policy)",
    "systemctl\\s.*aipager",
    "(pkill|killall)\\s.*(aipager|dtach|claude)",
    "\\.config/aipager",
    "\\.local/(share|state)/aipager",
    # the files from the phone and to it (paths.files_dir): own_uploads opens a person's own
    FILES_COMMAND,
    "aipager-(hook|statusline|modelswitch|reply|spool)",
    "claude-(policy|notes|status|reply|dtach|bgjob|exit)-",
    # Claude Code's own configuration (hooks there run as the owner)
    "\\.claude(/|\\.json|" + _E[1:],
    # a nested claude with privilege flags
    _B + "claude\\s.*--(dangerously-skip-permissions|permission-mode|allowed-?tools"
    "|append-system-prompt|system-prompt|mcp-config|add-dir|settings|resume|continue)",
    # whole-home and whole-disk searches
    _B + "(find|rg|ag|ack|fd|fdfind|tree|du|locate)\\s([^;&|]*\\s)?" + _HOME_ROOTS,
    _B + "(grep|egrep|ls)\\s([^;&|]*\\s)?-[A-Za-z]*[rR][^;&|]*\\s" + _HOME_ROOTS,
    # the system's secrets named on the command line (SYSTEM_SECRETS, environ)
    "/etc/(g?shadow|sudoers|security/opasswd|ssh/ssh_host_|krb5\\.keytab)",
    "/proc/[^;&|]*/environ",
)

#: dialect.required_literals of each FLOOR_COMMANDS pattern, precomputed so the
#: hook writes a floor snapshot without loading the dialect parser
#: (tests/policy/test_hookside.py keeps them current)
_FLOOR_NEEDLES = (
    ["doas", "pkexec", "runuser", "su", "sudo", "sudoedit"],
    ["$"],
    ["eval"],
    ["aipager"],
    ["systemctl"],
    ["killall", "pkill"],
    [".config/aipager"],
    ["/aipager"],
    ["aipager/files"],
    ["aipager-"],
    ["claude-"],
    [".claude"],
    ["claude"],
    ["ack", "ag", "du", "fd", "fdfind", "find", "locate", "rg", "tree"],
    ["egrep", "grep", "ls"],
    ["krb5.keytab", "security/opasswd", "shadow", "ssh/ssh_host_", "sudoers"],
    ["/environ"],
)
#: for snapshot.make(known=...)
KNOWN_NEEDLES = {(pattern, False): needles for pattern, needles in zip(FLOOR_COMMANDS, _FLOOR_NEEDLES, strict=True)}


def floor_globs(env) -> tuple[list[str], list[str]]:
    """The built-in no-access and no-write globs, ``~`` not yet expanded."""
    no_access = [
        "~/.claude/**",
        "~/.claude.json*",
        paths.config_dir(env) + "/**",
        paths.state_dir(env) + "/**",
        paths.data_dir(env) + "/**",
        # what members sent from the phone, and copies of what Claude sends
        paths.files_dir(env) + "/**",
    ]
    for folder in _unique([paths.session_dir(env), "/tmp"]):
        no_access += [f"{folder}/claude-{kind}-*" for kind in _SESSION_FILES]
    no_access.append(paths.control_dir(env) + "/aipager*")
    no_access += SECRET_GLOBS
    return _unique(no_access), list(PROJECT_NO_WRITE)


def _unique(items: list[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def expand_all(globs, home: str) -> list[str]:
    out: list[str] = []
    for glob in globs:
        for item in rules.expand_glob(glob, home):
            if item not in out:
                out.append(item)
    return out


def builtin_floor(env) -> dict:
    """The built-in floor as a rule set with ``~`` expanded."""
    home = paths.home(env)
    no_access, no_write = floor_globs(env)
    floor = rules.empty()
    floor["no_access"] = expand_all(no_access, home)
    floor["no_write"] = expand_all(no_write, home)
    floor["commands"] = list(FLOOR_COMMANDS)
    return floor


def uploads_person(authors) -> int | None:
    """The one person whose own uploads a task may read, or None.

    ``authors`` are ``(user_id, exempt)`` of every note that may have written the
    prompt (taken or waiting, as ``hookside.task_rules`` counts them).  There is a
    person only when every such note is theirs or the owner's (exempt): a note with
    no user id, or a second person, and the task reads nobody's uploads.  User ids
    are Telegram's (positive integers); anything else names nobody.
    """
    person = None
    for user_id, exempt in authors:
        if user_id is None:
            return None
        if exempt:
            continue
        if type(user_id) is not int or user_id <= 0 or person not in (None, user_id):
            return None
        person = user_id
    return person


def own_uploads(rule_set: dict, env, person: int) -> dict:
    """``rule_set`` (a floor) opened to ``person``'s own uploads (``paths.uploads_dir``)
    and nothing else.

    The files folder's two globs (the folder and everything in it) give way to globs
    for everything in it but ``<files>/in/u<person>`` and what lies there, in their
    place; the command pattern naming the folder gives way to one that lets a
    command name paths in that folder only.  Both matchers judge these as any
    other globs and patterns, so neither twin needs an exception rule.  A floor
    without the folder's globs (another environment's) is returned as it is:
    nothing is opened.
    """
    folder = paths.files_dir(env)
    keep = paths.UPLOADS_PREFIX + str(int(person))
    out = rules.empty()
    allowed = rule_set["allowed_tools"]
    out["allowed_tools"] = None if allowed is None else list(allowed)
    for key in rules.LIST_KEYS:
        out[key] = list(rule_set[key])
    if folder not in rule_set["no_access"] or folder + "/*" not in rule_set["no_access"]:
        return out
    no_access: list[str] = []
    for glob in rule_set["no_access"]:
        if glob == folder:
            no_access += all_but_globs(folder, keep)
        elif glob != folder + "/*":
            no_access.append(glob)
    out["no_access"] = _unique(no_access)
    out["commands"] = [all_but_command(keep) if p == FILES_COMMAND else p for p in rule_set["commands"]]
    return out


def own_uploads_needles(person: int) -> dict:
    """``snapshot.make(known=...)`` for the pattern ``own_uploads`` puts in place: every
    match holds FILES_COMMAND, as for the pattern it replaces (no parser on the hook's path)."""
    return {(all_but_command(paths.UPLOADS_PREFIX + str(int(person))), False): [FILES_COMMAND]}


def all_but_globs(folder: str, keep: str) -> list[str]:
    """Dialect globs matching ``folder`` and every path in it, except ``folder/keep`` and
    every path in that.  (A path in ``folder`` that does not start with ``keep + "/"``
    differs from it at some first character, or is a proper beginning of ``keep``.)"""
    out = [folder]
    wanted = keep + "/"
    for i, ch in enumerate(wanted):
        if i < len(keep):
            out.append(f"{folder}/{keep[:i]}")
        out.append(f"{folder}/{keep[:i]}[!{ch}]*")
    return out


def all_but_command(keep: str) -> str:
    """A dialect regex for FILES_COMMAND followed by anything but ``/keep/``: a command
    may name paths in that folder, no other place in the files folder (nor the folder
    ``keep`` itself, whose name cannot be told from its end here)."""
    tail = "($|[^/])"
    for ch in reversed("/" + keep):
        tail = f"($|[^{ch}]|{ch}{tail})"
    return FILES_COMMAND + tail


def load_floor(env) -> dict:
    """The floor the hook applies: the daemon's published file or the built-in.

    A published floor can only be stricter: the built-in is always merged in,
    so a tampered or stale file never weakens it.
    """
    builtin = builtin_floor(env)
    doc = fsio.read_json_own(paths.floor_file(env))
    if doc is None or doc.get("v") != 1:
        return builtin
    try:
        published = rules.check_shape(doc.get("rules"))
    except ValueError:
        return builtin
    return rules.stricter(builtin, published)


def publish_floor(env, floor: dict) -> str:
    """Write the effective floor for the hook (daemon side); return the path."""
    path = paths.floor_file(env)
    rules.check_shape(floor)
    from aipager.proto import trust  # daemon side only; the hook twin reads the floor without os

    trust.make_folder(paths.session_dir(env))
    fsio.write_json_atomic(path, {"v": 1, "rules": floor})
    return path
