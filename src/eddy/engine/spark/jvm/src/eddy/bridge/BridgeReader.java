package eddy.bridge;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.net.Socket;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.streaming.PartitionOffset;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeRead;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads a group's input as the bridge streams it: Arrow record batches of the group's rows
 * from every (topic, partition) slot, each row's slot in an extra last column, and an empty
 * batch whenever nothing arrived for a while, so that a read never blocks much past the
 * batch's deadline. The first column is the event's bus sequence within its slot.
 */
final class BridgeReader implements SupportsRealTimeRead<InternalRow> {
  /** The reader of each running task, for its writer to report how far the task got. */
  static final ConcurrentHashMap<Long, BridgeReader> OF_TASK = new ConcurrentHashMap<>();

  private final BridgePartition partition;
  private final Socket socket;
  private final BufferAllocator allocator = new RootAllocator();
  private final ArrowStreamReader stream;
  private final long task;
  private final List<String> slotTopics = new ArrayList<>();
  private final List<Integer> slotPartitions = new ArrayList<>();
  /** Per slot, the sequence of the next event to read. */
  private final long[] next;
  private ColumnarBatch batch;
  private BigIntVector seqs;
  private IntVector slots;
  private int row = -1;
  private int rows = 0;
  private long arrival = 0L;
  private boolean ended = false;
  /** A copy of {@link #next} taken when asked for, between two rows: every event before
   * it went through the plan and its rows reached the writer (a task asks for the next row
   * only once the last one is through). */
  private volatile long[] done;
  private volatile boolean doneWanted = false;

  BridgeReader(BridgePartition partition) throws IOException {
    this.partition = partition;
    int count = 0;
    for (Map.Entry<String, long[]> topic : partition.positions.entrySet()) {
      for (int p = 0; p < topic.getValue().length; p++) {
        slotTopics.add(topic.getKey());
        slotPartitions.add(p);
        count++;
      }
    }
    next = new long[count];
    int slot = 0;
    for (long[] seqs : partition.positions.values()) {
      for (long seq : seqs) {
        next[slot++] = seq;
      }
    }
    done = next.clone();
    TaskContext context = TaskContext.get();
    this.task = context == null ? -1L : context.taskAttemptId();
    OF_TASK.put(task, this);
    this.socket = partition.address.open(Map.of("op", "read", "start", partition.positions));
    this.stream = new ArrowStreamReader(
        new BufferedInputStream(socket.getInputStream(), 1 << 16), allocator);
  }

  @Override
  public RecordStatus nextWithTimeout(Long startTimeMs, Long timeoutMs) throws IOException {
    long deadline = startTimeMs + timeoutMs;
    publishDone();
    while (row + 1 >= rows) {
      if (ended || System.currentTimeMillis() >= deadline) {
        return RecordStatus.newStatusWithoutArrivalTime(false);
      }
      load();
      publishDone();  // waiting for events: everything read so far is through the plan
    }
    row++;
    next[slots.get(row)] = seqs.get(row) + 1;
    return RecordStatus.newStatusWithArrivalTimeMs(arrival);
  }

  @Override
  public RecordStatus nextWithTimeout(Long timeoutMs) throws IOException {
    return nextWithTimeout(System.currentTimeMillis(), timeoutMs);
  }

  private void load() throws IOException {
    if (!stream.loadNextBatch()) {
      // The bridge stopped (its group is stopping): the batch ends here; its writer,
      // which cannot reach the bridge either, keeps it from being committed.
      ended = true;
      rows = 0;
      row = -1;
      return;
    }
    VectorSchemaRoot root = stream.getVectorSchemaRoot();
    List<FieldVector> vectors = root.getFieldVectors();
    ColumnVector[] columns = new ColumnVector[vectors.size() - 1];
    for (int i = 0; i < columns.length; i++) {
      columns[i] = new ArrowColumnVector(vectors.get(i));
    }
    seqs = (BigIntVector) vectors.get(0);
    slots = (IntVector) vectors.get(vectors.size() - 1);
    rows = root.getRowCount();
    batch = new ColumnarBatch(columns, rows);
    row = -1;
    arrival = System.currentTimeMillis();
  }

  /** The slot of the row the task is processing now: its outputs are written meanwhile. */
  int currentSlot() {
    return slots.get(row);
  }

  private void publishDone() {
    if (doneWanted) {
      done = next.clone();
      doneWanted = false;
    }
  }

  /**
   * How far the task got, as {@code POS <topic> <partition> <seq>} lines: the copy of the
   * positions the task thread took at its last request, and a request for a newer one.
   */
  String progress() {
    doneWanted = true;
    return lines(done);
  }

  /** How far the task got once it has stopped reading (on its own thread, at its end). */
  String finalProgress() {
    return lines(next);
  }

  private String lines(long[] snapshot) {
    StringBuilder lines = new StringBuilder();
    for (int slot = 0; slot < snapshot.length; slot++) {
      lines.append("POS\t").append(slotTopics.get(slot)).append('\t')
          .append(slotPartitions.get(slot)).append('\t').append(snapshot[slot]).append('\n');
    }
    return lines.toString();
  }

  @Override
  public boolean next() throws IOException {
    return nextWithTimeout(System.currentTimeMillis(), Long.MAX_VALUE / 2).hasRecord();
  }

  @Override
  public InternalRow get() {
    return batch.getRow(row);
  }

  @Override
  public PartitionOffset getOffset() {
    LinkedHashMap<String, long[]> positions = new LinkedHashMap<>();
    for (int slot = 0; slot < next.length; slot++) {
      positions.computeIfAbsent(slotTopics.get(slot),
          topic -> new long[partition.positions.get(topic).length])[slotPartitions.get(slot)] =
          next[slot];
    }
    return new BridgePartition(partition.address, positions);
  }

  @Override
  public void close() throws IOException {
    OF_TASK.remove(task, this);
    try {
      stream.close();
    } finally {
      socket.close();
      allocator.close();
    }
  }
}
