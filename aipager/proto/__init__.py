"""The shared protocol layer: standard library only, used by the hook twins, the daemon and
its clients alike (file locations, wire names and sizes, the JSON reader, the spool file,
the one error tree, atomic private writes, trusted paths).  Empty on purpose: the hook
twin imports it on its hot path."""
