// A share-group member (KIP-932) on Kafka's KafkaShareConsumer, for tests/share.
// Compiled by the test (javac) and run with Kafka's client jars on the class path:
// java -cp DIR:JARS ShareConsumerWorker BOOTSTRAP TOPIC GROUP MODE [group.config=value ...]
//
// Group configs given are set first with the Admin client (GROUP config resource), so the
// group starts as the test needs (share.auto.offset.reset=earliest, ...).
// MODE "ack": every record is acknowledged explicitly by its value: a value starting with
// "reject" is rejected, one starting with "release" released, any other accepted; each
// poll's acknowledgements are committed with commitSync. MODE "hold": the first records
// polled are printed and never acknowledged (the process waits to be killed).
// Prints one JSON line per record: {"ev":"msg","o":O,"v":"...","dc":N,"ack":"ACCEPT"}, and
// {"ev":"commit_failed","error":"..."} when a commit fails. SIGTERM closes the consumer.

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareConsumerWorker {
    private static volatile boolean stop = false;

    private static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        String mode = args[3];
        List<AlterConfigOp> ops = new ArrayList<>();
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            ops.add(new AlterConfigOp(new ConfigEntry(kv[0], kv[1]), AlterConfigOp.OpType.SET));
        }
        if (!ops.isEmpty()) {
            Properties a = new Properties();
            a.put("bootstrap.servers", bootstrap);
            try (Admin admin = Admin.create(a)) {
                Map<ConfigResource, java.util.Collection<AlterConfigOp>> m = new HashMap<>();
                m.put(new ConfigResource(ConfigResource.Type.GROUP, group), ops);
                admin.incrementalAlterConfigs(m).all().get();
            }
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("max.poll.records", "10");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props);
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
        consumer.subscribe(List.of(topic));
        try {
            while (!stop) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : records) {
                    String v = r.value() == null ? "" : r.value();
                    AcknowledgeType type = AcknowledgeType.ACCEPT;
                    if (v.startsWith("reject")) {
                        type = AcknowledgeType.REJECT;
                    } else if (v.startsWith("release")) {
                        type = AcknowledgeType.RELEASE;
                    }
                    String ack = mode.equals("hold") ? "NONE" : type.name();
                    emit("{\"ev\":\"msg\",\"o\":" + r.offset() + ",\"v\":" + quote(v) + ",\"dc\":"
                            + r.deliveryCount().map(Short::intValue).orElse(-1) + ",\"ack\":\"" + ack + "\"}");
                    if (!mode.equals("hold")) {
                        consumer.acknowledge(r, type);
                    }
                }
                if (mode.equals("hold") && !records.isEmpty()) {
                    emit("{\"ev\":\"holding\"}");
                    Thread.sleep(Long.MAX_VALUE);
                }
                if (!records.isEmpty()) {
                    try {
                        consumer.commitSync();
                    } catch (Exception e) {
                        emit("{\"ev\":\"commit_failed\",\"error\":" + quote(e.toString()) + "}");
                    }
                }
            }
        } catch (WakeupException e) {
            // closing
        } finally {
            consumer.close();
            emit("{\"ev\":\"closed\"}");
            closed.countDown();
        }
    }
}
