package eddy.bridge;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The real-time source of an execution group: its input topics, served by the group's
 * bridge in the driver's Python process (eddy.engine.run.real_time).
 *
 * <p>Spark's real-time mode keeps one task per input partition running for a whole batch
 * and asks its reader for the next row as soon as the last one is processed. The Python
 * data source API has no such reader, so this one is in Java; the bus stays in Python,
 * which streams each partition to it as Arrow record batches over a loopback socket.
 *
 * <p>Options: {@code host}, {@code port}, {@code token} (the bridge's address and secret),
 * {@code schema} (the rows' schema as Spark's JSON), {@code start} (the offsets to start
 * from when the checkpoint has none, as {@link BridgeOffset} JSON).
 */
public final class BridgeProvider implements TableProvider {
  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return (StructType) DataType.fromJson(options.get("schema"));
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new BridgeTable(schema, new BridgeAddress(properties));
  }
}
