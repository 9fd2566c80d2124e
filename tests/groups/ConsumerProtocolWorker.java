// A Java consumer-group member using KIP-848's consumer protocol (group.protocol=consumer),
// or the classic one, for tests/groups/test_consumer_protocol.py and test_mixed_groups.py.
// Run with Kafka's client jars on the class path:
// java ConsumerProtocolWorker.java BOOTSTRAP TOPIC GROUP [consumer|classic]
//
// It prints the same JSON lines as worker.py: {"ev":"assigned","partitions":[...]},
// {"ev":"msg","p":P,"o":O,"v":"..."} per record, {"ev":"closed"} after a clean close.
// Offsets are committed synchronously after each batch is printed (and again when
// partitions are revoked; a commit that failed mid-rebalance is printed as
// {"ev":"commit_failed"} and covered by the next one), so a partition handed to another
// member resumes after the last printed record. SIGTERM closes the consumer, which leaves the group (member epoch -1, or
// LeaveGroup for a classic member).

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ConsumerProtocolWorker {
    private static volatile boolean stop = false;

    private static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    private static String partitions(Collection<TopicPartition> tps) {
        TreeSet<Integer> sorted = new TreeSet<>();
        for (TopicPartition tp : tps) {
            sorted.add(tp.partition());
        }
        List<String> out = new ArrayList<>();
        for (int p : sorted) {
            out.add(Integer.toString(p));
        }
        return "[" + String.join(",", out) + "]";
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", args[2]);
        String protocol = args.length > 3 ? args[3] : "consumer";
        props.put("group.protocol", protocol);
        if (protocol.equals("classic")) {
            // The classic protocol's timings are the client's: learn of rebalances quickly.
            props.put("heartbeat.interval.ms", "500");
            props.put("session.timeout.ms", "10000");
        }
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop = true;
            consumer.wakeup();
            try {
                closed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        consumer.subscribe(List.of(args[1]), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                // Everything printed is committed already, unless the last commit failed.
                try {
                    consumer.commitSync();
                } catch (Exception e) {
                    emit("{\"ev\":\"error\",\"error\":\"commit on revoke: " + e.getClass().getSimpleName() + "\"}");
                }
                emit("{\"ev\":\"assigned\",\"partitions\":" + partitions(consumer.assignment().stream()
                        .filter(tp -> !revoked.contains(tp)).toList()) + "}");
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                emit("{\"ev\":\"assigned\",\"partitions\":" + partitions(consumer.assignment()) + "}");
            }
        });
        try {
            while (!stop) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : records) {
                    emit("{\"ev\":\"msg\",\"p\":" + r.partition() + ",\"o\":" + r.offset()
                            + ",\"v\":\"" + r.value() + "\"}");
                }
                if (!records.isEmpty()) {
                    try {
                        consumer.commitSync();
                    } catch (RebalanceInProgressException | CommitFailedException e) {
                        // Mid-rebalance (a classic member), or the member epoch moved while
                        // the commit was under way (KIP-848): the next commit, or the one on
                        // revocation, covers these records.
                        emit("{\"ev\":\"commit_failed\",\"error\":\"" + e.getClass().getSimpleName() + "\"}");
                    }
                }
            }
        } catch (WakeupException e) {
            // SIGTERM: close below.
        } finally {
            // A wakeup may have cut the last commit short: commit what was printed. The
            // hook's wakeup is still pending when the loop saw `stop` before any blocking
            // call took it; then it cuts this commit short instead, once.
            try {
                try {
                    consumer.commitSync();
                } catch (WakeupException pending) {
                    consumer.commitSync();
                }
            } catch (Exception e) {
                emit("{\"ev\":\"error\",\"error\":\"final commit: " + e.getClass().getSimpleName() + "\"}");
            }
            consumer.close();
            emit("{\"ev\":\"closed\"}");
            closed.countDown();
        }
    }
}
