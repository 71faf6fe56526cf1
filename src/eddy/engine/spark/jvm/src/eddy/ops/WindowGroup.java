package eddy.ops;

/**
 * One group of a window aggregate's {@code group by} ({@link WindowAggregate}): its
 * running sums, long sums and counts per argument, and the selected aggregates those cannot
 * give ({@link KeptAggregate}), over the group's events in the window, added and removed as
 * the per-event runtime's aggregators do.
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
    /** Per selected attribute: its kept aggregate, or null. */
    final KeptAggregate[] kept;
    long size;

    WindowGroup(Object key, int arguments, char[] kinds, int[] indexes) {
        this.key = key;
        this.sums = new double[arguments];
        this.longSums = new long[arguments];
        this.counts = new long[arguments];
        this.kept = new KeptAggregate[kinds.length];
        for (int i = 0; i < kinds.length; i++) {
            kept[i] = KeptAggregate.of(kinds[i], indexes[i]);
        }
    }

    /** An event enters: its arguments ({@code values}, NaN for a null; {@code longs} of
     *  the integral ones) and its selected plain values ({@code plain}: read only by a
     *  {@code distinctCount}). */
    void add(double[] values, long[] longs, Object[] plain) {
        for (int i = 0; i < values.length; i++) {
            if (!Double.isNaN(values[i])) {
                sums[i] += values[i];
                longSums[i] += longs[i];  // wraps, as Java's long does
                counts[i] += 1;
            }
        }
        keep(values, plain, true);
        size += 1;
    }

    void remove(double[] values, Object[] plain) {
        for (int i = 0; i < values.length; i++) {
            if (!Double.isNaN(values[i])) {
                sums[i] -= values[i];
                longSums[i] = (long) ((double) longSums[i] - values[i]);
                counts[i] -= 1;
            }
        }
        keep(values, plain, false);
        size -= 1;
    }

    /** The event's value of each kept aggregate in ({@code adding}) or out. */
    private void keep(double[] values, Object[] plain, boolean adding) {
        for (KeptAggregate aggregate : kept) {
            if (aggregate == null) {
                continue;
            }
            boolean own = aggregate.readsPlain();
            double value = own ? Double.NaN : values[aggregate.argument];
            Object object = own ? plain[aggregate.argument] : null;
            if (adding) {
                aggregate.add(value, object);
            } else {
                aggregate.remove(value, object);
            }
        }
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
        for (KeptAggregate aggregate : kept) {
            if (aggregate != null && !aggregate.fresh()) {
                return false;
            }
        }
        return true;
    }
}
