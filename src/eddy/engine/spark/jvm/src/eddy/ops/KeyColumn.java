package eddy.ops;

import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Row;

/**
 * The state key of an operator's input row: its int column at {@code position}. A class,
 * not a lambda: a serialized lambda is rebuilt in each task through
 * {@code $deserializeLambda$} reflection, which a plain class does not need.
 */
final class KeyColumn implements MapFunction<Row, Integer> {
    private static final long serialVersionUID = 1L;
    private final int position;

    KeyColumn(int position) {
        this.position = position;
    }

    @Override
    public Integer call(Row row) {
        return row.getInt(position);
    }
}
