// The Java client's consume-transform-produce loop for the exactly-once test: reads `in`
// in group `eos` (read_committed), writes each value upper-cased to `out` in the input's
// partition and commits its input offsets in the same transaction
// (sendOffsetsToTransaction). The test SIGKILLs it at random moments.
//
// Run as a single-file program: java -cp <kafka-clients jars> EosWorker.java BOOTSTRAP

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class EosWorker {
    public static void main(String[] args) {
        String bootstrap = args[0];
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("transactional.id", "eos-worker");
        pp.put("linger.ms", "5");
        pp.put("key.serializer", ByteArraySerializer.class.getName());
        pp.put("value.serializer", ByteArraySerializer.class.getName());
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp);
        producer.initTransactions();

        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("group.id", "eos");
        cp.put("isolation.level", "read_committed");
        cp.put("enable.auto.commit", "false");
        cp.put("auto.offset.reset", "earliest");
        // Static membership: a restarted instance takes the killed one's place at once.
        cp.put("group.instance.id", "eos-worker-1");
        cp.put("session.timeout.ms", "6000");
        cp.put("key.deserializer", ByteArrayDeserializer.class.getName());
        cp.put("value.deserializer", ByteArrayDeserializer.class.getName());
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp);
        consumer.subscribe(List.of("in"));

        while (true) {
            ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
            if (records.isEmpty()) {
                continue;
            }
            producer.beginTransaction();
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (ConsumerRecord<byte[], byte[]> r : records) {
                byte[] upper = new String(r.value()).toUpperCase(Locale.ROOT).getBytes();
                producer.send(new ProducerRecord<>("out", r.partition(), r.key(), upper));
                offsets.put(new TopicPartition(r.topic(), r.partition()),
                        new OffsetAndMetadata(r.offset() + 1));
            }
            try {
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
            } catch (ProducerFencedException e) {
                throw e;
            } catch (KafkaException e) {
                // Abortable: drop the attempt and read again from the committed positions.
                producer.abortTransaction();
                Set<TopicPartition> partitions = records.partitions();
                Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(partitions);
                for (TopicPartition tp : partitions) {
                    OffsetAndMetadata at = committed.get(tp);
                    if (at == null) {
                        consumer.seekToBeginning(List.of(tp));
                    } else {
                        consumer.seek(tp, at.offset());
                    }
                }
            }
        }
    }
}
