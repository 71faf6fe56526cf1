package eddy.ops;

import java.io.Serializable;
import java.util.Comparator;

/**
 * The attributes a {@code #window.sort(n, a [, 'asc'|'desc'], ...)} orders its events by
 * (selected plain columns of {@link WindowAggregate}) and their directions; an event
 * without a value of one cannot be ordered, as in the runtime.
 */
final class SortKeys implements Comparator<WindowState.Entry>, Serializable {
    private static final long serialVersionUID = 1L;

    private final int[] columns;
    private final boolean[] ascending;

    /** {@code keys}: per attribute its plain column's index then {@code a} or {@code d}. */
    SortKeys(String[] keys) {
        this.columns = new int[keys.length];
        this.ascending = new boolean[keys.length];
        for (int i = 0; i < keys.length; i++) {
            columns[i] = Integer.parseInt(keys[i].substring(0, keys[i].length() - 1));
            ascending[i] = keys[i].endsWith("a");
        }
    }

    /** The number of plain columns the window keeps for them. */
    int plainsRead() {
        int plain = 0;
        for (int column : columns) {
            plain = Math.max(plain, column + 1);
        }
        return plain;
    }

    @Override
    public int compare(WindowState.Entry a, WindowState.Entry b) {
        for (int k = 0; k < columns.length; k++) {
            Object left = a.plain[columns[k]];
            Object right = b.plain[columns[k]];
            if (left == null || right == null) {
                throw new IllegalStateException("#window.sort: an event without a value of "
                        + "an attribute it sorts by cannot be ordered");
            }
            int result = Ordering.compareValues(left, right);
            if (result != 0) {
                return ascending[k] ? result : -result;
            }
        }
        return 0;
    }
}
