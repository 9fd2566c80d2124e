"""Fault injection and a durability checker: numbered writes with acks=all while brokers
are killed, paused, cut off or lose their disks, then a count of what was acknowledged but
lost, duplicated, reordered or made up (``checker``). For a local ``Cluster``: ``faults``,
``netcut``, ``schedule``. For one broker daemon (``node``): ``single`` (crashes, pauses,
damaged files, full disk, EIO and power loss through the FUSE layer of ``fusefs`` /
``fusemount``), run and judged by ``single_run``, with a consumer group's committed
offsets checked by ``offsets`` (bench/faults.py, tests/faults)."""
