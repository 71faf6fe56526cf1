package eddy.ops;

import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.StructType;

/**
 * An operator's input rows grouped by their state key, the int column at a position.
 *
 * <p>Grouped by the column itself, not by a function of the row: {@code groupByKey} with a
 * {@code MapFunction} deserializes every input row into a {@code Row} on the map side only to
 * read its key (an {@code AppendColumns} step before the shuffle), where grouping by the
 * column reads the key in generated code.
 */
final class KeyColumn {
    private KeyColumn() {
    }

    static KeyValueGroupedDataset<Integer, Row> grouped(Dataset<Row> rows, int position) {
        return rows.groupBy(rows.col(rows.columns()[position]))
                .as(Encoders.INT(), Encoders.row(rows.schema()));
    }

    /** {@code rows} through an operator's {@code step}, per state key (the column at
     *  {@code position}) with one binary value of state, into rows of {@code output}; when
     *  {@code output} ends with {@link Carrying#CARRY}, the step is a link of a chain and
     *  hands on the rows it carries ({@link Carrying}). */
    static Dataset<Row> stepped(Dataset<Row> rows, int position,
                                FlatMapGroupsWithStateFunction<Integer, Row, byte[], Row> step,
                                StructType output) {
        String[] names = output.fieldNames();
        if (names[names.length - 1].equals(Carrying.CARRY)) {
            step = new Carrying(step, names.length - 1);
        }
        return grouped(rows, position).flatMapGroupsWithState(step, OutputMode.Append(),
                Encoders.BINARY(), Encoders.row(output), GroupStateTimeout.NoTimeout());
    }
}
