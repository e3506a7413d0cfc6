"""Keeping the published safety floor in step with the owner's policy file.

The hook enforces ``paths.floor_file`` (merged with the built-in floor, so a
missing or weaker file never weakens it).  The owner's ``floor`` additions in
``paths.policy_user_file`` only reach the hook once published, so the daemon
publishes at start and again whenever the policy file changes; it also puts
the floor back when something removed or replaced the published file.  A
policy file that cannot be used (bad JSON, schema, pattern) is logged once per
version of the file and changes nothing: the floor published before stays.

The config counts too: a hub credential it names is in the floor
(``model.config_secrets``), and so does the credential a joined host was started
with (``paths.joined_hub_file``).  The check is four ``stat`` calls, cheap enough
for every daemon tick.
"""

from __future__ import annotations

import logging
from typing import Mapping

from aipager.proto import paths
from aipager.proto.errors import PolicyError
from aipager.proto.fsnames import Stamp, file_stamp

log = logging.getLogger("aipager.daemon")

class FloorPublisher:
    """Publishes the effective floor (built-in + the owner's additions) for the hook.

    Args:
        env: decides the policy file, the published floor file and ``~``.
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.policy_path = paths.policy_user_file(self.env)
        #: the config names a secret the floor covers (``model.config_secrets``)
        self.config_path = paths.config_file(self.env)
        #: ... and so does the record of the hub this host joined
        self.joined_path = paths.joined_hub_file(self.env)
        self.floor_path = paths.floor_file(self.env)
        #: the policy, config and join record's versions last looked at (published or refused)
        self._policy_seen: tuple[Stamp, Stamp, Stamp] | object = object()
        #: the floor file as this publisher last wrote it
        self._written: Stamp = None
        #: the last floor published from a usable policy (rule set), if any
        self.floor: dict | None = None
        #: why the current policy file is not in force, or "" when it is
        self.problem = ""
        self._write_failed = False

    def check(self) -> bool:
        """Publish when the policy file or the published floor changed.

        Never raises.  Returns:
            True when the floor file was written.
        """
        stamp = (file_stamp(self.policy_path), file_stamp(self.config_path),
                 file_stamp(self.joined_path))
        if stamp != self._policy_seen:
            self._policy_seen = stamp
            return self._reload()
        if self.floor is None:
            return False
        if self._write_failed:
            return self._write(self.floor)
        if file_stamp(self.floor_path) != self._written:
            log.warning("the published safety floor %s was removed or changed by something "
                        "else; publishing it again", self.floor_path)
            return self._write(self.floor)
        return False

    def _reload(self) -> bool:
        from aipager.policy import floor as floor_mod
        from aipager.policy import model

        try:
            policy = model.load_policy(self.env)
            floor = model.effective_floor(policy, self.env)
        except Exception as exc:  # noqa: BLE001 - no policy file may stop the daemon
            self.problem = str(exc) if isinstance(exc, PolicyError) else f"{type(exc).__name__}: {exc}"
            log.error("the policy file %s cannot be used, so changes in it are not in force "
                      "(the floor published before stays; `aipager policy check` lists the "
                      "problems; a fixed file is published at once): %s",
                      self.policy_path, self.problem)
            if self.floor is None:
                # Keep what is published now (never less than the built-in floor) and
                # put it back should it disappear.
                self.floor = floor_mod.load_floor(self.env)
                self._written = file_stamp(self.floor_path)
            return False
        self.problem = ""
        self.floor = floor
        return self._write(floor)

    def _write(self, floor: dict) -> bool:
        from aipager.policy import floor as floor_mod

        try:
            floor_mod.publish_floor(self.env, floor)
        except (OSError, ValueError) as exc:
            self._written = None
            if not self._write_failed:
                log.error("cannot publish the safety floor to %s: %s (retrying)",
                          self.floor_path, exc)
            self._write_failed = True
            return False
        if self._write_failed:
            log.info("the safety floor is published again at %s", self.floor_path)
        self._write_failed = False
        self._written = file_stamp(self.floor_path)
        log.info("safety floor published: %d no-access, %d no-write, %d command patterns",
                 len(floor["no_access"]), len(floor["no_write"]),
                 len(floor["commands"]) + len(floor["commands_i"]))
        return True
