package kafkalite.spark;

import java.io.Serializable;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Where the sink's columns are in a row and what type each has, checked by the Python
 * writer's rules (python/kafkalite/spark/writer.py, check_schema): {@code value} (string
 * or binary) is required; {@code topic} (string) unless the topic option is set; {@code
 * key} string or binary; {@code partition} int; {@code headers} an array of structs with
 * a string {@code key} and a binary or string {@code value}. Other columns are ignored.
 */
final class SinkSchema implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Column index, or -1 when the column is absent. */
  final int topic;
  final int key;
  final int value;
  final int partition;
  final int headers;
  /** Whether key / value / header values are strings (else binary). */
  final boolean keyIsString;
  final boolean valueIsString;
  final boolean headerValueIsString;

  SinkSchema(StructType schema, String topicOption) {
    topic = index(schema, "topic");
    key = index(schema, "key");
    value = index(schema, "value");
    partition = index(schema, "partition");
    headers = index(schema, "headers");
    if (value < 0) {
      throw new IllegalArgumentException("the sink needs a 'value' column (string or binary)");
    }
    if (topic < 0 && (topicOption == null || topicOption.isEmpty())) {
      throw new IllegalArgumentException("the sink needs a 'topic' column or the 'topic' option");
    }
    expect(schema, topic, "string", type -> type instanceof StringType);
    expect(schema, partition, "integer", type -> type instanceof IntegerType);
    keyIsString = key >= 0 && isString(schema, key, "key");
    valueIsString = isString(schema, value, "value");
    boolean headerString = false;
    if (headers >= 0) {
      DataType type = schema.fields()[headers].dataType();
      StructType header = null;
      if (type instanceof ArrayType && ((ArrayType) type).elementType() instanceof StructType) {
        header = (StructType) ((ArrayType) type).elementType();
      }
      if (header == null
          || header.fields().length != 2
          || !header.fields()[0].name().equals("key")
          || !(header.fields()[0].dataType() instanceof StringType)
          || !header.fields()[1].name().equals("value")) {
        throw new IllegalArgumentException(
            "column 'headers' must be array<struct<key:string,value:binary>>, got "
                + type.simpleString());
      }
      headerString = isString(header, 1, "headers.value");
    }
    headerValueIsString = headerString;
  }

  private static int index(StructType schema, String name) {
    StructField[] fields = schema.fields();
    for (int i = 0; i < fields.length; i++) {
      if (fields[i].name().equals(name)) {
        return i;
      }
    }
    return -1;
  }

  private static void expect(
      StructType schema, int at, String kind, java.util.function.Predicate<DataType> ok) {
    if (at >= 0 && !ok.test(schema.fields()[at].dataType())) {
      StructField field = schema.fields()[at];
      throw new IllegalArgumentException(
          "column '"
              + field.name()
              + "' must be "
              + kind
              + ", got "
              + field.dataType().simpleString());
    }
  }

  private static boolean isString(StructType schema, int at, String name) {
    DataType type = schema.fields()[at].dataType();
    if (type instanceof StringType) {
      return true;
    }
    if (type instanceof BinaryType) {
      return false;
    }
    throw new IllegalArgumentException(
        "column '" + name + "' must be string or binary, got " + type.simpleString());
  }
}
