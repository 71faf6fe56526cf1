package eddy.bridge;

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.ForeachWriter;
import org.apache.spark.sql.Row;

/**
 * Hands a real-time task's output rows to the group's bridge, which appends them to the
 * output topics. Rows go out as tab-separated lines ({@code _slot, _seq, _order, _ts, _query,
 * _target, _expired, _data}; {@code \N} for null; {@code _slot} is the input the row came
 * from, read by the same thread just before) and are flushed every millisecond, so a
 * row waits neither for the batch's end nor for a full buffer. {@link #close} returns only
 * once the bridge has appended every row of the task, before Spark commits the batch.
 *
 * <p>Each flush ends with {@code POS <topic> <partition> <seq>} lines, one per slot the task
 * reads: every event of it before {@code seq} has gone through the plan and its rows are in
 * this flush or an earlier one, so once the bridge has stored them the group has completed
 * that far (what "idle" means to eddy), without waiting for the batch's end.
 */
public final class BridgeWriter extends ForeachWriter<Row> {
  private static final long serialVersionUID = 1L;
  private static final byte[] END = "END\n".getBytes(StandardCharsets.UTF_8);

  private final BridgeAddress address;
  private transient Socket socket;
  private transient BufferedOutputStream out;
  private transient Thread flusher;
  private transient volatile boolean dirty;
  private transient int[] fields;
  private transient long task;
  private transient String reported;
  private transient BridgeReader reader;

  public BridgeWriter(String host, int port, String token) {
    this.address = new BridgeAddress(Map.of("host", host, "port", Integer.toString(port),
                                            "token", token));
  }

  @Override
  public boolean open(long partitionId, long epochId) {
    try {
      socket = address.open(Map.of("op", "write", "partition", partitionId, "epoch", epochId));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot reach the eddy bridge", e);
    }
    try {
      out = new BufferedOutputStream(socket.getOutputStream(), 1 << 16);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    task = TaskContext.get() == null ? -1L : TaskContext.get().taskAttemptId();
    reported = "";
    reader = null;
    flusher = new Thread(this::flushLoop, "eddy-bridge-flush-" + partitionId);
    flusher.setDaemon(true);
    flusher.start();
    return true;
  }

  private void flushLoop() {
    try {
      while (!Thread.currentThread().isInterrupted()) {
        Thread.sleep(1);
        BridgeReader taskReader = BridgeReader.OF_TASK.get(task);
        synchronized (this) {
          // read under the lock: the rows of every event before it are in the buffer
          String progress = taskReader == null ? reported : taskReader.progress();
          if (dirty || !progress.equals(reported)) {
            out.write(progress.getBytes(StandardCharsets.UTF_8));
            reported = progress;
            out.flush();
            dirty = false;
          }
        }
      }
    } catch (InterruptedException | IOException e) {
      // closing: close() flushes what is left and reports a broken connection
    }
  }

  @Override
  public void process(Row row) {
    if (fields == null) {
      fields = new int[] {row.fieldIndex("_seq"), row.fieldIndex("_order"),
          row.fieldIndex("_ts"), row.fieldIndex("_query"), row.fieldIndex("_target"),
          row.fieldIndex("_expired"), row.fieldIndex("_data")};
    }
    if (reader == null) {
      reader = BridgeReader.OF_TASK.get(task);
      if (reader == null) {
        throw new IllegalStateException("a row to write before the task read one");
      }
    }
    StringBuilder line = new StringBuilder(128);
    line.append(reader.currentSlot()).append('\t').append(text(row, fields[0])).append('\t');
    if (row.isNullAt(fields[1])) {
      line.append("\\N");
    } else {
      List<Object> order = row.getList(fields[1]);
      for (int i = 0; i < order.size(); i++) {
        if (i > 0) {
          line.append(',');
        }
        line.append(order.get(i));
      }
    }
    line.append('\t').append(text(row, fields[2])).append('\t').append(text(row, fields[3]))
        .append('\t').append(text(row, fields[4])).append('\t');
    line.append(row.isNullAt(fields[5]) ? "\\N" : row.getBoolean(fields[5]) ? "1" : "0");
    line.append('\t').append(text(row, fields[6])).append('\n');
    byte[] bytes = line.toString().getBytes(StandardCharsets.UTF_8);
    synchronized (this) {
      try {
        out.write(bytes);
      } catch (IOException e) {
        throw new UncheckedIOException("the eddy bridge closed the connection", e);
      }
      dirty = true;
    }
  }

  private static String text(Row row, int field) {
    return row.isNullAt(field) ? "\\N" : row.get(field).toString();
  }

  @Override
  public void close(Throwable errorOrNull) {
    if (flusher != null) {
      flusher.interrupt();
    }
    try {
      if (errorOrNull == null && out != null) {
        synchronized (this) {
          BridgeReader taskReader = BridgeReader.OF_TASK.get(task);
          if (taskReader != null) {  // close() runs on the task's thread, after its last row
            out.write(taskReader.finalProgress().getBytes(StandardCharsets.UTF_8));
          }
          out.write(END);
          out.flush();
        }
        BufferedReader in = new BufferedReader(
            new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
        String answer = in.readLine();
        if (!"OK".equals(answer)) {
          throw new IllegalStateException("the eddy bridge did not store the task's rows: "
              + answer);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("the eddy bridge closed the connection", e);
    } finally {
      try {
        if (socket != null) {
          socket.close();
        }
      } catch (IOException ignored) {
        // already closed
      }
    }
  }
}
