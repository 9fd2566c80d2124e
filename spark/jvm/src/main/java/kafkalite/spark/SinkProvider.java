package kafkalite.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * kafkalite's JVM writer as a DataSource V2 provider: {@code df.write.format(SHORT_NAME)}
 * (or this class's name) writes rows to a topic with no Python worker in between; the
 * rows' bytes go to the Rust producer over JNI. Batch writes only; reads and streams are
 * the Python data source's ({@code format("kafkalite")}).
 */
public final class SinkProvider implements TableProvider, DataSourceRegister {
  public static final String SHORT_NAME = "kafkalite-jvm";

  @Override
  public String shortName() {
    return SHORT_NAME;
  }

  /** A sink has no schema of its own: the DataFrame's is the table's. */
  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    throw new UnsupportedOperationException(
        SHORT_NAME + " only writes; read with format(\"kafkalite\")");
  }

  @Override
  public Table getTable(
      StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new SinkTable(schema);
  }
}
