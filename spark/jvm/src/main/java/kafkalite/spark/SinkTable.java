package kafkalite.spark;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The topic(s) a write goes to, as Spark's V2 API sees them: a table that takes any
 * DataFrame's columns (the schema is checked by {@link SinkSchema}) and appends them. Each
 * task flushes its producer before it reports, so commit has nothing left to do; a failed
 * job leaves what succeeded tasks wrote (at-least-once, as Spark's Kafka sink).
 */
final class SinkTable implements SupportsWrite {
  private final StructType schema;

  SinkTable(StructType schema) {
    this.schema = schema;
  }

  @Override
  public String name() {
    return SinkProvider.SHORT_NAME;
  }

  @Override
  public Column[] columns() {
    StructField[] fields = schema.fields();
    Column[] columns = new Column[fields.length];
    for (int i = 0; i < fields.length; i++) {
      columns[i] = Column.create(fields[i].name(), fields[i].dataType(), fields[i].nullable());
    }
    return columns;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.ACCEPT_ANY_SCHEMA);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    // Checked on the driver, so bad options fail the write before any task starts.
    String library =
        SparkSession.active().conf().get(SinkOptions.LIBRARY_CONF, (String) null);
    SinkOptions options = new SinkOptions(info.options(), library);
    SinkSchema columns = new SinkSchema(info.schema(), options.topic);
    return new WriteBuilder() {
      @Override
      public Write build() {
        return new Write() {
          @Override
          public BatchWrite toBatch() {
            return new Batch(options, columns);
          }
        };
      }
    };
  }

  private static final class Batch implements BatchWrite {
    private final SinkOptions options;
    private final SinkSchema columns;

    Batch(SinkOptions options, SinkSchema columns) {
      this.options = options;
      this.columns = columns;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      return new SinkWriterFactory(options, columns);
    }

    /** Tasks write as they go; Spark need not coordinate their commits. */
    @Override
    public boolean useCommitCoordinator() {
      return false;
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {}

    @Override
    public void abort(WriterCommitMessage[] messages) {}
  }
}
