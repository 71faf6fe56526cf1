package eddy.ops;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;

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
}
