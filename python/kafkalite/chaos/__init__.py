"""Fault injection and a durability checker for a local ``Cluster``: numbered writes with
acks=all while leaders are killed, paused, cut off or lose their disks, then a count of
what was acknowledged but lost, duplicated or reordered (``checker``, ``faults``,
``netcut``, ``schedule``)."""
