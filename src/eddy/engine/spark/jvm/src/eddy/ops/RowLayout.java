package eddy.ops;

import java.io.Serializable;

import org.apache.spark.sql.Row;

/**
 * Where a {@link WindowAggregate} input row holds what, and how it is read: {@code _seq},
 * {@code _ts}, event, passes and the state key first, then the group columns, the
 * arguments (doubles, or longs for the integral ones), the selected plain columns, an
 * {@code externalTime} window's timestamp attribute and an {@code externalTimeBatch}'s
 * start attribute (see the operator's class comment).
 */
final class RowLayout implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final int FIRST = 5;

    final int groups;
    final int arguments;
    final int plains;
    /** Per argument: whether it is an int or long column (its row value a Long). */
    private final boolean[] integral;

    /** {@code argumentTypes}: one letter per argument, {@code d} a double, {@code l} an int
     *  or long. */
    RowLayout(int groups, String argumentTypes, int plains) {
        this.groups = groups;
        this.arguments = argumentTypes.length();
        this.plains = plains;
        this.integral = new boolean[arguments];
        for (int i = 0; i < arguments; i++) {
            integral[i] = argumentTypes.charAt(i) == 'l';
        }
    }

    /** The row's group's map key. */
    Object groupKey(Row row) {
        return WindowState.groupKey(groups, i -> row.get(FIRST + i));
    }

    /** The row's arguments: doubles (NaN for a null) and, for the integral ones, longs. */
    void readArguments(Row row, double[] values, long[] longs) {
        int at = FIRST + groups;
        for (int i = 0; i < arguments; i++) {
            if (row.isNullAt(at + i)) {
                values[i] = Double.NaN;
            } else if (integral[i]) {
                longs[i] = row.getLong(at + i);
                values[i] = (double) longs[i];
            } else {
                values[i] = row.getDouble(at + i);
            }
        }
    }

    /** Where the selected plain columns start. */
    int plainAt() {
        return FIRST + groups + arguments;
    }

    Object[] plainValues(Row row) {
        int at = plainAt();
        Object[] plain = new Object[plains];
        for (int i = 0; i < plains; i++) {
            plain[i] = row.get(at + i);
        }
        return plain;
    }

    /** A passing row's timestamp attribute (after the plain columns). */
    long externalClock(Row row) {
        int clockAt = plainAt() + plains;
        if (row.isNullAt(clockAt)) {
            throw new IllegalStateException("#window.externalTime: an event without a value "
                    + "of its timestamp attribute");
        }
        return row.getLong(clockAt);
    }

    /** A keyed {@code session} window's key, as text (after the plain columns). */
    String sessionKey(Row row) {
        return row.getString(plainAt() + plains);
    }

    /** An {@code externalTimeBatch}'s start attribute (after the timestamp attribute). */
    Object startAttribute(Row row) {
        return row.get(plainAt() + plains + 1);
    }
}
