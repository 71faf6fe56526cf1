import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;

import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The filtered-window benchmark job written by hand in Java: each room's last minute kept in
 * flatMapGroupsWithState, every event's average from a running sum. Input columns: _seq
 * (long), _ts (long), room (int), temp (double), already filtered.
 */
public final class HandwrittenSlidingAverage {
    private HandwrittenSlidingAverage() {
    }

    /** A room's events of the last window, oldest first. */
    public static final class Window implements Serializable {
        public long[] ts = new long[0];
        public double[] temp = new double[0];
    }

    public static final StructType OUTPUT = new StructType()
            .add("_ts", DataTypes.LongType).add("roomNo", DataTypes.IntegerType)
            .add("avgTemp", DataTypes.DoubleType);

    public static Dataset<Row> apply(Dataset<Row> events, long windowMs) {
        FlatMapGroupsWithStateFunction<Integer, Row, Window, Row> step =
                (Integer room, Iterator<Row> rows, GroupState<Window> state) -> {
                    List<Row> fresh = new ArrayList<>();
                    rows.forEachRemaining(fresh::add);
                    fresh.sort((a, b) -> Long.compare(a.getLong(0), b.getLong(0)));
                    Window old = state.exists() ? state.get() : new Window();
                    int n = old.ts.length + fresh.size();
                    long[] ts = Arrays.copyOf(old.ts, n);
                    double[] temp = Arrays.copyOf(old.temp, n);
                    for (int i = 0; i < fresh.size(); i++) {
                        ts[old.ts.length + i] = fresh.get(i).getLong(1);
                        temp[old.ts.length + i] = fresh.get(i).getDouble(3);
                    }
                    List<Row> out = new ArrayList<>(fresh.size());
                    int start = 0;
                    double sum = 0;
                    for (int i = 0; i < old.ts.length; i++) {
                        sum += temp[i];
                    }
                    for (int i = old.ts.length; i < n; i++) {
                        sum += temp[i];
                        while (ts[start] <= ts[i] - windowMs) {
                            sum -= temp[start++];
                        }
                        out.add(RowFactory.create(ts[i], room, sum / (i + 1 - start)));
                    }
                    Window kept = new Window();
                    kept.ts = Arrays.copyOfRange(ts, start, n);
                    kept.temp = Arrays.copyOfRange(temp, start, n);
                    state.update(kept);
                    return out.iterator();
                };
        return events.groupByKey((MapFunction<Row, Integer>) row -> row.getInt(2), Encoders.INT())
                .flatMapGroupsWithState(step, OutputMode.Append(), Encoders.javaSerialization(Window.class),
                        Encoders.row(OUTPUT), GroupStateTimeout.NoTimeout());
    }
}
