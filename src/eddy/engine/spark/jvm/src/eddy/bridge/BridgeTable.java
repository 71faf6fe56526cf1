package eddy.bridge;

import java.util.EnumSet;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The group's input as a table Spark can stream from; see {@link BridgeProvider}. */
final class BridgeTable implements SupportsRead {
  private final StructType schema;
  private final BridgeAddress address;

  BridgeTable(StructType schema, BridgeAddress address) {
    this.schema = schema;
    this.address = address;
  }

  @Override
  public String name() {
    return "eddy-bridge";
  }

  @Override
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.MICRO_BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return () -> new Scan() {
      @Override
      public StructType readSchema() {
        return schema;
      }

      @Override
      public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
        return new BridgeStream(schema, address);
      }
    };
  }
}
