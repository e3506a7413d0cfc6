"""Several machines, one chat: hosts join a hub over NATS JetStream.

One daemon, the hub, owns the bot; every other machine's daemon joins it as a
host.  A host's outputs (``aipager.port.outputs.Output``) cross the broker
serialized (``codec``), and a use case for a host's session (a command of
``aipager.port.commands``) crosses it whole (``commands.Ask``, ``usecases``): the host's
own service decides it and does it on its own daemon.  The safety decision never
crosses: each host's hook decides, and a tap is a command the host's daemon answers
its own hook with.

Modules, one purpose each:

- ``names``: host names, subjects, stream and consumer names, ``name@host``.
- ``layout``: where the hub's and a host's files live.
- ``creds``: the hub's host list (who may join) and a host's credential file (NKey or
  password, and the hub's CA).
- ``tls``: the hub's own CA and server certificate, and what a host verifies it with.
- ``server``: the ``nats-server`` configuration (per-host permissions) and the
  embedded server process.
- ``codec``: Outputs and sessions to and from JSON.
- ``commands``: what the hub sends a host (``Ask``: a use case; ``PutFile``: a piece of
  a file), and running it there.
- ``usecases``: the service's commands and results as JSON.
- ``shape``: whether a record read from a host holds what its annotations say.
- ``signing``: commands the hub signs, so a host runs only fresh ones the hub made.
- ``transfer``: files from the phone sent in pieces to the host whose session they are for.
- ``streams``: the streams and consumers the hub creates.
- ``conn``: connecting to the broker.
- ``outlog``: a host's durable log of what it has not yet published.
- ``host``: a joined host's link (publish outputs, run commands).
- ``joined``: which hub this machine joined, with which credential (for ``doctor``).
- ``link``: the hub's link (take outputs, send commands, know the hosts).
- ``port``: ``HubPort``, the clients' ``DaemonPort`` over the local daemon and the hosts.
- ``view``: what the hub knows of each host (its sessions, when it was last heard from).
- ``relabel``: a host's texts with its sessions' labels as the hub shows them.
- ``ration``, ``deadletter``: a host that misbehaves is told of once a period; records
  the hub cannot read are set aside.
- ``settings``: the config's ``hub`` object; ``supervise``: a failing link starts again.

Nothing here imports the chat (``aipager.bot``), and the daemon never imports
this package: ``aipager.main`` puts them together.  ``nats-py``, ``nkeys`` and
``cryptography`` (the ``aipager[hub]`` extra) are imported only where they are used.
"""
