package kafkalite.spark;

import java.io.Serializable;
import java.util.Locale;
import java.util.Map;

/**
 * The writer's options, spelled as Spark's Kafka sink spells them: {@code topic}, and the
 * producer's settings as {@code kafka.<key>}, with the Python writer's defaults
 * (python/kafkalite/spark/writer.py: acks=all, idempotent, no compression, batch.size 1
 * MiB). Every bad value is an error naming the option and the value. Producer keys the
 * writer has no use for (linger.ms, buffer.memory, ...) are accepted and ignored: a task
 * hands over rows a chunk at a time, so nothing lingers.
 */
final class SinkOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Where the JNI library is; unset: next to the jar (register() sets it). */
  static final String LIBRARY_OPTION = "kafkalite.jni.library";
  /** The same, for every write of a session (a Spark conf key). */
  static final String LIBRARY_CONF = "spark.kafkalite.jni.library";

  static final int BATCH_BYTES_DEFAULT = 1 << 20;

  final String topic;
  final String bootstrapServers;
  final String clientId;
  final int acks;
  final boolean idempotent;
  final String compression;
  final int batchBytes;
  final String libraryPath;

  SinkOptions(Map<String, String> options, String sessionLibraryPath) {
    topic = get(options, "topic");
    bootstrapServers = get(options, "kafka.bootstrap.servers");
    if (bootstrapServers == null || bootstrapServers.trim().isEmpty()) {
      throw new IllegalArgumentException(
          "kafka.bootstrap.servers: required (e.g. localhost:9092)");
    }
    String id = get(options, "kafka.client.id");
    clientId = id == null ? "kafkalite-spark-sink" : id;
    acks = acks(get(options, "kafka.acks"));
    idempotent = bool(options, "kafka.enable.idempotence", true);
    String codec = get(options, "kafka.compression.type");
    compression = codec == null ? "none" : codec.trim().toLowerCase(Locale.ROOT);
    if (!compression.matches("none|gzip|snappy|lz4|zstd")) {
      throw new IllegalArgumentException(
          "kafka.compression.type: expected none, gzip, snappy, lz4 or zstd, got '" + codec + "'");
    }
    batchBytes = positive(options, "kafka.batch.size", BATCH_BYTES_DEFAULT);
    String library = get(options, LIBRARY_OPTION);
    libraryPath = library != null ? library : sessionLibraryPath;
  }

  /** Options arrive case-insensitive from Spark, but look both ways up for plain maps. */
  private static String get(Map<String, String> options, String key) {
    String value = options.get(key);
    return value != null ? value : options.get(key.toLowerCase(Locale.ROOT));
  }

  private static int acks(String value) {
    if (value == null) {
      return -1;
    }
    switch (value.trim().toLowerCase(Locale.ROOT)) {
      case "all":
      case "-1":
        return -1;
      case "0":
        return 0;
      case "1":
        return 1;
      default:
        throw new IllegalArgumentException(
            "kafka.acks: must be all, -1, 0 or 1, got '" + value + "'");
    }
  }

  private static boolean bool(Map<String, String> options, String key, boolean fallback) {
    String value = get(options, key);
    if (value == null) {
      return fallback;
    }
    String word = value.trim().toLowerCase(Locale.ROOT);
    if (!word.equals("true") && !word.equals("false")) {
      throw new IllegalArgumentException(key + ": expected true or false, got '" + value + "'");
    }
    return word.equals("true");
  }

  private static int positive(Map<String, String> options, String key, int fallback) {
    String value = get(options, key);
    if (value == null) {
      return fallback;
    }
    try {
      int number = Integer.parseInt(value.trim());
      if (number > 0) {
        return number;
      }
    } catch (NumberFormatException e) {
      // reported below, with the value
    }
    throw new IllegalArgumentException(
        key + ": expected a positive integer, got '" + value + "'");
  }
}
