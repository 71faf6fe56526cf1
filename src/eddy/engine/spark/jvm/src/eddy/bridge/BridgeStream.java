package eddy.bridge;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeMode;
import org.apache.spark.sql.types.StructType;

/**
 * The stream of a group's input topics in real-time mode: a batch has a start but no end;
 * its end is where each partition's reader stood when the batch's time was up.
 */
final class BridgeStream implements MicroBatchStream, SupportsRealTimeMode {
  private final StructType schema;
  private final BridgeAddress address;
  private BridgeOffset lastStart;

  BridgeStream(StructType schema, BridgeAddress address) {
    this.schema = schema;
    this.address = address;
  }

  @Override
  public Offset initialOffset() {
    return BridgeOffset.parse(address.start);
  }

  @Override
  public Offset latestOffset() {
    try {
      return BridgeOffset.parse(address.ask(Map.of("op", "latest")));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot reach the eddy bridge", e);
    }
  }

  @Override
  public Offset deserializeOffset(String json) {
    return BridgeOffset.parse(json);
  }

  @Override
  public InputPartition[] planInputPartitions(Offset start) {
    lastStart = (BridgeOffset) start;
    return new InputPartition[] {new BridgePartition(address, lastStart.positions)};
  }

  @Override
  public Offset mergeOffsets(PartitionOffset[] offsets) {
    LinkedHashMap<String, long[]> merged = new LinkedHashMap<>();
    for (Map.Entry<String, long[]> topic : lastStart.positions.entrySet()) {
      merged.put(topic.getKey(), topic.getValue().clone());
    }
    for (PartitionOffset offset : offsets) {
      ((BridgePartition) offset).positions.forEach(
          (topic, seqs) -> merged.put(topic, seqs.clone()));
    }
    return new BridgeOffset(merged);
  }

  @Override
  public InputPartition[] planInputPartitions(Offset start, Offset end) {
    throw new UnsupportedOperationException(
        "the eddy bridge source runs only with a real-time trigger");
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new Factory();
  }

  @Override
  public void commit(Offset end) {
    // The group's progress listener commits the bus positions (eddy.engine.run.group_runner).
  }

  @Override
  public void stop() {}

  private static final class Factory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      try {
        return new BridgeReader((BridgePartition) partition);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot reach the eddy bridge", e);
      }
    }
  }
}
