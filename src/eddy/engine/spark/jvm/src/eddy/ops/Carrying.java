package eddy.ops;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;

/**
 * An operator's step in a chain of operators, handing on the rows the chain carries.
 *
 * <p>Spark shares no part of a plan between two branches of a query: had the app's outputs
 * read a producer's operator and a consumer read it too, the producer would run twice, each
 * copy with its own state. So the chain is one line instead: each input row carries, in its
 * last column ({@link #CARRY}, a struct), an output row of the operators before this one,
 * and this step hands it on as an output of its own (the other columns null); a row whose
 * first column ({@code _seq}) is set is also an input of the step, without that column.
 * The step's own outputs get a null {@link #CARRY}. The writer takes each output from
 * whichever part is set.
 */
final class Carrying implements FlatMapGroupsWithStateFunction<Integer, Row, byte[], Row>,
        Serializable {
    private static final long serialVersionUID = 1L;
    static final String CARRY = "_carry";

    private final FlatMapGroupsWithStateFunction<Integer, Row, byte[], Row> step;
    private final int width;

    /** {@code width}: the number of columns of the step's own outputs. */
    Carrying(FlatMapGroupsWithStateFunction<Integer, Row, byte[], Row> step, int width) {
        this.step = step;
        this.width = width;
    }

    @Override
    public Iterator<Row> call(Integer key, Iterator<Row> input, GroupState<byte[]> state)
            throws Exception {
        List<Row> live = new ArrayList<>();
        List<Row> out = new ArrayList<>();
        while (input.hasNext()) {
            Row row = input.next();
            int last = row.length() - 1;
            if (!row.isNullAt(last)) {
                Object[] carried = new Object[width + 1];
                carried[width] = row.get(last);
                out.add(RowFactory.create(carried));
            }
            if (!row.isNullAt(0)) {
                Object[] values = new Object[last];
                for (int i = 0; i < last; i++) {
                    values[i] = row.get(i);
                }
                live.add(RowFactory.create(values));
            }
        }
        if (!live.isEmpty()) {  // (a key with carried rows only has nothing to step)
            Iterator<Row> own = step.call(key, live.iterator(), state);
            while (own.hasNext()) {
                Row row = own.next();
                Object[] values = new Object[width + 1];
                for (int i = 0; i < width; i++) {
                    values[i] = row.get(i);
                }
                out.add(RowFactory.create(values));
            }
        }
        return out.iterator();
    }
}
