package eddy.bridge;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.core.type.TypeReference;

import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * Bus positions {@code {"<topic>": [<next seq of partition 0>, ...], ...}}: the same JSON as
 * the micro-batch source's offsets, so either mode can read the other's checkpointed
 * positions and the group's listener commits them the same way.
 */
final class BridgeOffset extends Offset {
  final LinkedHashMap<String, long[]> positions;

  BridgeOffset(LinkedHashMap<String, long[]> positions) {
    this.positions = positions;
  }

  static BridgeOffset parse(String json) {
    try {
      Map<String, long[]> parsed = BridgeAddress.JSON.readValue(
          json, new TypeReference<LinkedHashMap<String, long[]>>() {});
      return new BridgeOffset(new LinkedHashMap<>(parsed));
    } catch (IOException e) {
      throw new UncheckedIOException("not bus offsets: " + json, e);
    }
  }

  @Override
  public String json() {
    try {
      return BridgeAddress.JSON.writeValueAsString(positions);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
