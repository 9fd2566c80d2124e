package kafkalite.spark;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** A task's report: how many records it wrote. */
final class Written implements WriterCommitMessage {
  private static final long serialVersionUID = 1L;

  final long records;

  Written(long records) {
    this.records = records;
  }
}
