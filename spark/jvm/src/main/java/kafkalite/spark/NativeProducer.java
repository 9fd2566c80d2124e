package kafkalite.spark;

import java.io.File;
import java.net.URISyntaxException;

/**
 * The JNI library's functions (rust/spark-jni). A producer is a handle to a Rust object
 * that owns a row buffer: Java writes rows straight into it (its address comes from
 * {@link #buffer}) and hands over a whole chunk per {@link #append}, so a task makes a
 * few JNI calls per chunk and none per row. One task thread uses a handle. Every method
 * throws {@link java.io.IOException} (unchecked here, as natives may) with the failure's
 * message: a broker's refusal names the Kafka error code and its name.
 */
final class NativeProducer {
  /** The library's file name, as the build script puts it next to the jar. */
  static final String LIBRARY_FILE = "libkafkalite_spark_jni.so";

  private static String loaded;

  private NativeProducer() {}

  /**
   * Load the library from {@code path} (null or empty: next to this class's jar), once per
   * JVM; a later call with another path is ignored, as a JVM loads a library only once.
   */
  static synchronized void load(String path) {
    if (loaded != null) {
      return;
    }
    String file = path == null || path.isEmpty() ? besideJar() : path;
    if (!new File(file).isFile()) {
      throw new IllegalStateException(
          "kafkalite's JNI library is not at "
              + file
              + ": build it with scripts/build-spark-jvm.sh or set the option "
              + SinkOptions.LIBRARY_OPTION);
    }
    System.load(file);
    loaded = file;
  }

  private static String besideJar() {
    try {
      File jar =
          new File(NativeProducer.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      return new File(jar.getParentFile(), LIBRARY_FILE).getPath();
    } catch (URISyntaxException | SecurityException | NullPointerException e) {
      return LIBRARY_FILE;
    }
  }

  /**
   * Connects and (idempotent) gets a producer id; returns the handle. Keyless rows start at
   * partition {@code sticky} (modulo the topic's count).
   */
  static native long open(
      String bootstrapServers,
      String clientId,
      int acks,
      boolean idempotent,
      String compression,
      int batchBytes,
      int chunkBytes,
      int sticky);

  /** The row buffer's address, the buffer made at least {@code bytes} long first. */
  static native long buffer(long handle, int bytes);

  /** Encodes the buffer's first {@code length} bytes as rows of {@code topic} and queues them. */
  static native void append(long handle, String topic, int length);

  /** Waits until every record is written; returns how many were. */
  static native long flush(long handle);

  /** Frees the producer; the handle is not used again. */
  static native void close(long handle);
}
