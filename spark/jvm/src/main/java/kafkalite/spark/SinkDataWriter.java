package kafkalite.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One task's writer: copies each row's partition, key, value and headers into the native
 * producer's row buffer (the layout rust/spark-jni/src/rows.rs reads: native-order ints,
 * -1 lengths for nulls) and hands the buffer over when full or when the topic changes;
 * the Rust side encodes it and sends it from a thread of its own while this one fills the
 * buffer again. Nothing is copied twice and no JNI call is made per row.
 */
final class SinkDataWriter implements DataWriter<InternalRow> {
  /**
   * Bytes of rows per JNI call: a few batches' worth at the default batch.size, so a call
   * is rare, and little memory per task.
   */
  static final int CHUNK_BYTES = 4 << 20;

  private final SinkOptions options;
  private final SinkSchema columns;
  private long handle;
  private long address;
  private int capacity;
  private int used;
  /** The topic of the rows in the buffer (and, from a topic column, its bytes). */
  private String chunkTopic;
  private UTF8String chunkTopicBytes;

  // The row being written: where its key's and value's bytes are (base object + offset,
  // as Platform addresses them) and how long (-1: null).
  private Object keyBase;
  private long keyOffset;
  private int keyLength;
  private Object valueBase;
  private long valueOffset;
  private int valueLength;
  private Object sliceBase;
  private long sliceOffset;
  private int sliceLength;

  SinkDataWriter(SinkOptions options, SinkSchema columns, int partitionId) {
    this.options = options;
    this.columns = columns;
    NativeProducer.load(options.libraryPath);
    handle =
        NativeProducer.open(
            options.bootstrapServers,
            options.clientId,
            options.acks,
            options.idempotent,
            options.compression,
            options.batchBytes,
            CHUNK_BYTES,
            partitionId);
    capacity = CHUNK_BYTES;
    address = NativeProducer.buffer(handle, capacity);
    chunkTopic = options.topic;
  }

  @Override
  public void write(InternalRow row) {
    if (options.topic == null) {
      switchTopic(row);
    }
    int partition = -1;
    if (columns.partition >= 0 && !row.isNullAt(columns.partition)) {
      partition = row.getInt(columns.partition);
      if (partition < 0) {
        throw new IllegalArgumentException(
            "partition " + partition + " does not exist: partitions are numbered from 0");
      }
    }
    keyLength = -1;
    if (columns.key >= 0 && !row.isNullAt(columns.key)) {
      if (columns.keyIsString) {
        UTF8String key = row.getUTF8String(columns.key);
        keyBase = key.getBaseObject();
        keyOffset = key.getBaseOffset();
        keyLength = key.numBytes();
      } else {
        binaryAt(row, columns.key);
        keyBase = sliceBase;
        keyOffset = sliceOffset;
        keyLength = sliceLength;
      }
    }
    valueLength = -1;
    if (!row.isNullAt(columns.value)) {
      if (columns.valueIsString) {
        UTF8String value = row.getUTF8String(columns.value);
        valueBase = value.getBaseObject();
        valueOffset = value.getBaseOffset();
        valueLength = value.numBytes();
      } else {
        binaryAt(row, columns.value);
        valueBase = sliceBase;
        valueOffset = sliceOffset;
        valueLength = sliceLength;
      }
    }
    ArrayData headers =
        columns.headers >= 0 && !row.isNullAt(columns.headers)
            ? row.getArray(columns.headers)
            : null;
    long need =
        16L + Math.max(keyLength, 0) + Math.max(valueLength, 0) + headersLength(headers);
    reserve(need);
    long at = address + used;
    Platform.putInt(null, at, partition);
    at = put(at + 4, keyBase, keyOffset, keyLength);
    at = put(at, valueBase, valueOffset, valueLength);
    at = putHeaders(at, headers);
    used = (int) (at - address);
    keyBase = null;
    valueBase = null;
    sliceBase = null;
  }

  /**
   * Where a binary field's bytes are, into the slice fields. In an UnsafeRow (what Spark's
   * operators hand a writer) that is inside the row, read as UnsafeRow.getBinary reads
   * it (offset in the high 32 bits of the field, length in the low) but without copying
   * them into a new array per row; other rows copy.
   */
  private void binaryAt(InternalRow row, int ordinal) {
    if (row instanceof UnsafeRow) {
      UnsafeRow unsafe = (UnsafeRow) row;
      long offsetAndSize = unsafe.getLong(ordinal);
      sliceBase = unsafe.getBaseObject();
      sliceOffset = unsafe.getBaseOffset() + (int) (offsetAndSize >> 32);
      sliceLength = (int) offsetAndSize;
    } else {
      byte[] bytes = row.getBinary(ordinal);
      sliceBase = bytes;
      sliceOffset = Platform.BYTE_ARRAY_OFFSET;
      sliceLength = bytes.length;
    }
  }

  /** With a topic column: rows of another topic than the buffer's send the buffer first. */
  private void switchTopic(InternalRow row) {
    if (row.isNullAt(columns.topic)) {
      throw new IllegalArgumentException("a row has a null 'topic' and no 'topic' option is set");
    }
    UTF8String topic = row.getUTF8String(columns.topic);
    if (!topic.equals(chunkTopicBytes)) {
      send();
      chunkTopicBytes = topic.copy();
      chunkTopic = topic.toString();
    }
  }

  /** Room for {@code need} more bytes: send what is buffered, grow for a huge row. */
  private void reserve(long need) {
    if (used + need <= capacity) {
      return;
    }
    send();
    if (need > capacity) {
      if (need > Integer.MAX_VALUE) {
        throw new IllegalArgumentException("a row of " + need + " bytes is too big to write");
      }
      capacity = (int) need;
      address = NativeProducer.buffer(handle, capacity);
    }
  }

  private void send() {
    if (used > 0) {
      NativeProducer.append(handle, chunkTopic, used);
      used = 0;
    }
  }

  private static long put(long at, Object base, long offset, int length) {
    Platform.putInt(null, at, length);
    if (length > 0) {
      Platform.copyMemory(base, offset, null, at + 4, length);
    }
    return at + 4 + Math.max(length, 0);
  }

  private long headersLength(ArrayData headers) {
    long total = 0;
    int count = headers == null ? 0 : headers.numElements();
    for (int i = 0; i < count; i++) {
      InternalRow header = headers.getStruct(i, 2);
      if (header == null || header.isNullAt(0)) {
        throw new IllegalArgumentException("a header has a null key");
      }
      total += 8 + header.getUTF8String(0).numBytes();
      if (!header.isNullAt(1)) {
        total +=
            columns.headerValueIsString
                ? header.getUTF8String(1).numBytes()
                : header.getBinary(1).length;
      }
    }
    return total;
  }

  private long putHeaders(long at, ArrayData headers) {
    int count = headers == null ? 0 : headers.numElements();
    Platform.putInt(null, at, count);
    at += 4;
    for (int i = 0; i < count; i++) {
      InternalRow header = headers.getStruct(i, 2);
      UTF8String key = header.getUTF8String(0);
      at = put(at, key.getBaseObject(), key.getBaseOffset(), key.numBytes());
      if (header.isNullAt(1)) {
        at = put(at, null, 0, -1);
      } else if (columns.headerValueIsString) {
        UTF8String value = header.getUTF8String(1);
        at = put(at, value.getBaseObject(), value.getBaseOffset(), value.numBytes());
      } else {
        byte[] value = header.getBinary(1);
        at = put(at, value, Platform.BYTE_ARRAY_OFFSET, value.length);
      }
    }
    return at;
  }

  @Override
  public WriterCommitMessage commit() {
    send();
    return new Written(NativeProducer.flush(handle));
  }

  @Override
  public void abort() {
    close();
  }

  @Override
  public void close() {
    if (handle != 0) {
      long closing = handle;
      handle = 0;
      NativeProducer.close(closing);
    }
  }
}
