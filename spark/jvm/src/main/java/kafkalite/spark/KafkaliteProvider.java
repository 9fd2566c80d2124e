package kafkalite.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code format("kafkalite")} once the jar is on the session: batch writes go to the JVM
 * writer ({@link SinkProvider}), everything else (batch and streaming reads, streaming
 * writes) to the Python data source, which register() then names {@link #PYTHON_NAME}
 * (Spark refuses a JVM and a Python source under one name, so one of them must answer
 * for both).
 */
public final class KafkaliteProvider implements TableProvider, DataSourceRegister {
  public static final String SHORT_NAME = "kafkalite";
  /** The name the Python data source is registered under beside this provider. */
  public static final String PYTHON_NAME = "kafkalite-python";

  private final PythonDataSourceV2 python = new PythonDataSourceV2();

  public KafkaliteProvider() {
    python.setShortName(PYTHON_NAME);
  }

  @Override
  public String shortName() {
    return SHORT_NAME;
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return python.inferSchema(options);
  }

  @Override
  public Table getTable(
      StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new Routed(python.getTable(schema, partitioning, properties), schema);
  }

  /** The Python source's table, with batch writes taken by the JVM writer. */
  private static final class Routed implements SupportsRead, SupportsWrite {
    private final Table python;
    private final SinkTable jvm;

    Routed(Table python, StructType schema) {
      this.python = python;
      this.jvm = new SinkTable(schema);
    }

    @Override
    public String name() {
      return SHORT_NAME;
    }

    @Override
    public Column[] columns() {
      return python.columns();
    }

    @Override
    public Set<TableCapability> capabilities() {
      Set<TableCapability> capabilities = EnumSet.noneOf(TableCapability.class);
      capabilities.addAll(python.capabilities());
      capabilities.addAll(jvm.capabilities());
      return capabilities;
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return ((SupportsRead) python).newScanBuilder(options);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      return new WriteBuilder() {
        @Override
        public Write build() {
          return new Write() {
            @Override
            public BatchWrite toBatch() {
              return jvm.newWriteBuilder(info).build().toBatch();
            }

            @Override
            public StreamingWrite toStreaming() {
              return ((SupportsWrite) python).newWriteBuilder(info).build().toStreaming();
            }
          };
        }
      };
    }
  }
}
