package eddy.ops;

import java.util.ArrayDeque;
import java.util.Iterator;

/**
 * One group of a window aggregate's {@code group by} ({@link SlidingTimeAggregate}): its
 * running sums, long sums, counts and extremes over the group's events in the window, added
 * and removed as the per-event runtime's aggregators do.
 */
final class WindowGroup {
    /** Its {@code group by} value, a list of them when there are several, or
     *  {@code WindowState.NO_GROUP}: a plain value hashes and compares without a
     *  list's iterators. */
    final Object key;
    final double[] sums;
    /** The long sums of the integral arguments (zero for the others). */
    final long[] longSums;
    final long[] counts;
    final Extreme[] extremes;
    long size;

    WindowGroup(Object key, int arguments, char[] kinds, int[] indexes) {
        this.key = key;
        this.sums = new double[arguments];
        this.longSums = new long[arguments];
        this.counts = new long[arguments];
        this.extremes = new Extreme[kinds.length];
        for (int i = 0; i < kinds.length; i++) {
            if (kinds[i] == 'M' || kinds[i] == 'm') {
                extremes[i] = new Extreme(kinds[i] == 'M', indexes[i]);
            }
        }
    }

    void add(double[] values, long[] longs) {
        for (int i = 0; i < values.length; i++) {
            if (!Double.isNaN(values[i])) {
                sums[i] += values[i];
                longSums[i] += longs[i];  // wraps, as Java's long does
                counts[i] += 1;
            }
        }
        for (Extreme extreme : extremes) {
            if (extreme != null) {
                extreme.add(values[extreme.argument]);
            }
        }
        size += 1;
    }

    void remove(double[] values) {
        for (int i = 0; i < values.length; i++) {
            if (!Double.isNaN(values[i])) {
                sums[i] -= values[i];
                longSums[i] = (long) ((double) longSums[i] - values[i]);
                counts[i] -= 1;
            }
        }
        for (Extreme extreme : extremes) {
            if (extreme != null) {
                extreme.remove(values[extreme.argument]);
            }
        }
        size -= 1;
    }

    boolean fresh() {
        if (size != 0) {
            return false;
        }
        for (int i = 0; i < sums.length; i++) {
            if (counts[i] != 0 || sums[i] != 0.0 || longSums[i] != 0) {
                return false;
            }
        }
        for (Extreme extreme : extremes) {
            if (extreme != null && !extreme.kept.isEmpty()) {
                return false;
            }
        }
        return true;
    }

    /**
     * {@code max}/{@code min} of one argument over a window, as the runtime keeps it (and
     * the reference's sliding {@code MaxAttributeAggregator}): a monotonic queue of the
     * values that can still become the extreme; a removal takes the first kept value equal
     * to the leaving one ({@code Double.equals}), and the extreme is then the queue's head.
     */
    static final class Extreme {
        final boolean max;
        final int argument;
        final ArrayDeque<Double> kept = new ArrayDeque<>();

        Extreme(boolean max, int argument) {
            this.max = max;
            this.argument = argument;
        }

        private boolean worse(double kept, double value) {
            return max ? kept < value : kept > value;
        }

        void add(double value) {
            if (Double.isNaN(value)) {
                return;
            }
            while (!kept.isEmpty() && worse(kept.peekLast(), value)) {
                kept.pollLast();
            }
            kept.addLast(value);
        }

        void remove(double value) {
            if (Double.isNaN(value)) {
                return;
            }
            Iterator<Double> values = kept.iterator();
            while (values.hasNext()) {
                if (values.next().equals(value)) {
                    values.remove();
                    return;
                }
            }
        }

        Double value() {
            return kept.peekFirst();
        }
    }
}
