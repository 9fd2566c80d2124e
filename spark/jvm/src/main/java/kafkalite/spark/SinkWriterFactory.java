package kafkalite.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;

/** What each task gets (serialized): the checked options and columns. */
final class SinkWriterFactory implements DataWriterFactory {
  private static final long serialVersionUID = 1L;

  private final SinkOptions options;
  private final SinkSchema columns;

  SinkWriterFactory(SinkOptions options, SinkSchema columns) {
    this.options = options;
    this.columns = columns;
  }

  @Override
  public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
    return new SinkDataWriter(options, columns, partitionId);
  }
}
