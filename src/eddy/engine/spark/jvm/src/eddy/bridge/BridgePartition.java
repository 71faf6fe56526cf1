package eddy.bridge;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;

/**
 * Everything a group reads, from {@code positions} on, by one long task: every partition of
 * every input topic. One task per group, however many topics (a fault stream is one more)
 * and partitions it reads, because a real-time task holds its slot for the whole batch.
 */
final class BridgePartition implements InputPartition, PartitionOffset {
  private static final long serialVersionUID = 1L;

  final BridgeAddress address;
  final LinkedHashMap<String, long[]> positions;

  BridgePartition(BridgeAddress address, Map<String, long[]> positions) {
    this.address = address;
    this.positions = new LinkedHashMap<>();
    positions.forEach((topic, seqs) -> this.positions.put(topic, seqs.clone()));
  }
}
