"""Several machines, one chat: hosts join a hub over NATS JetStream.

One daemon, the hub, owns the bot; every other machine's daemon joins it as a
host.  A host's outputs (``aipager.daemon.notifier.Output``) cross the broker
serialized (``codec``), and the chat's calls on the daemon's port
(``aipager.daemon.port.DaemonPort``) for a host's session cross it as commands
(``commands``) that the host runs against its own daemon.  The safety decision
never crosses: each host's compiled hook decides, and a tap is a command the
host's daemon answers its own hook with.

Modules, one purpose each:

- ``names``: host names, subjects, stream and consumer names, ``name@host``.
- ``layout``: where the hub's and a host's files live.
- ``creds``: the hub's host list (who may join) and a host's credential file (NKey or
  password, and the hub's CA).
- ``tls``: the hub's own CA and server certificate, and what a host verifies it with.
- ``server``: the ``nats-server`` configuration (per-host permissions) and the
  embedded server process.
- ``codec``: Outputs and sessions to and from JSON.
- ``commands``: the port's calls as records, their results, and running them.
- ``transfer``: files from the phone sent in pieces to the host whose session they are for.
- ``streams``: the streams and consumers the hub creates.
- ``conn``: connecting to the broker.
- ``outlog``: a host's durable log of what it has not yet published.
- ``host``: a joined host's link (publish outputs, run commands).
- ``joined``: which hub this machine joined, with which credential (for ``doctor``).
- ``link``: the hub's link (take outputs, send commands, know the hosts).
- ``port``: ``HubPort``, the chat's ``DaemonPort`` over the local daemon and the hosts.
- ``status``: the sessions grouped by host, as ``/status`` could show them.

Nothing here imports the chat (``aipager.bot``), and the daemon never imports
this package: ``aipager.main`` puts them together.  ``nats-py``, ``nkeys`` and
``cryptography`` (the ``aipager[hub]`` extra) are imported only where they are used.
"""
