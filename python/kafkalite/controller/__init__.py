"""Multi-broker mode: ZooKeeper through kazoo, as Kafka's ZooKeeper mode used it.

- ``zookeeper``: a private ZooKeeper server on loopback (tests, the launcher, the bench);
- ``znodes``: Kafka's znode paths and JSON;
- ``assignment``: replica assignment (round-robin, rack-aware) as Kafka's AdminUtils;
- ``election``: controller election and the controller epoch that fences it;
- ``controller``: the active controller's leader and ISR decisions, topic deletion,
  requested elections and the auto leader rebalance;
- ``leadership``: preferred/unclean election and rebalance rules (pure functions);
- ``reassignment``: Kafka's partition reassignment steps;
- ``snapshot``: ZooKeeper's metadata read as one snapshot for the Rust broker;
- ``admin``: clients' metadata-changing requests written to ZooKeeper;
- ``admin_moves``: ElectLeaders, partition reassignments, producer-id blocks;
- ``node``: one broker process's session, tying these together.

Single-node and embedded brokers import none of this: kazoo is only needed with
``zookeeper.connect``.
"""
