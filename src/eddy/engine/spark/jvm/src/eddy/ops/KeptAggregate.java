package eddy.ops;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * One selected aggregate of a {@link WindowGroup} that running sums and counts cannot give:
 * {@code max}/{@code min}, {@code maxForever}/{@code minForever}, {@code stdDev},
 * {@code and}/{@code or} and {@code distinctCount}, each added and removed as the per-event
 * runtime's aggregator ({@code eddy.runtime.aggregators}) does, so that its outputs, and
 * when its group may be forgotten, are the runtime's. An argument arrives as a double (NaN
 * for a null; a bool as 1 or 0); {@code distinctCount} reads the event's own value.
 */
abstract class KeptAggregate {
    /** The argument number it reads ({@code distinctCount}: the selected plain column). */
    final int argument;

    KeptAggregate(int argument) {
        this.argument = argument;
    }

    /** The aggregate of one selected attribute's kind letter (see
     *  {@link WindowAggregate}), or null when sums and counts give it. */
    static KeptAggregate of(char kind, int argument) {
        switch (kind) {
            case 'M': case 'm': return new Extreme(kind == 'M', argument);
            case 'F': case 'f': return new Forever(kind == 'F', argument);
            case 'd': return new Deviation(argument);
            case '&': case '|': return new Logical(kind == '&', argument);
            case 'u': return new Distinct(argument);
            default: return null;
        }
    }

    /** Whether it reads the event's plain value instead of a double argument. */
    boolean readsPlain() {
        return false;
    }

    abstract void add(double value, Object plain);

    abstract void remove(double value, Object plain);

    /** Its value now; {@code integral}: an extreme of an int goes out as an int. */
    abstract Object value(boolean integral);

    /** Whether it is as a new group's is (the runtime's {@code canDestroy}). */
    abstract boolean fresh();

    abstract void write(DataOutputStream out) throws IOException;

    abstract void read(DataInputStream in) throws IOException;

    static Object extreme(Double value, boolean integral) {
        if (value == null || !integral) {
            return value;
        }
        return Integer.valueOf((int) value.doubleValue());  // (no ?: : it would unbox)
    }

    /**
     * {@code max}/{@code min} of one argument over a window, as the runtime keeps it (and
     * the reference's sliding {@code MaxAttributeAggregator}): a monotonic queue of the
     * values that can still become the extreme; a removal takes the first kept value equal
     * to the leaving one ({@code Double.equals}), and the extreme is then the queue's head.
     */
    static final class Extreme extends KeptAggregate {
        final boolean max;
        final ArrayDeque<Double> kept = new ArrayDeque<>();

        Extreme(boolean max, int argument) {
            super(argument);
            this.max = max;
        }

        private boolean worse(double kept, double value) {
            return max ? kept < value : kept > value;
        }

        @Override
        void add(double value, Object plain) {
            if (Double.isNaN(value)) {
                return;
            }
            while (!kept.isEmpty() && worse(kept.peekLast(), value)) {
                kept.pollLast();
            }
            kept.addLast(value);
        }

        @Override
        void remove(double value, Object plain) {
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

        @Override
        Object value(boolean integral) {
            return extreme(kept.peekFirst(), integral);
        }

        @Override
        boolean fresh() {
            return kept.isEmpty();
        }

        @Override
        void write(DataOutputStream out) throws IOException {
            out.writeInt(kept.size());
            for (double value : kept) {
                out.writeDouble(value);
            }
        }

        @Override
        void read(DataInputStream in) throws IOException {
            for (int k = in.readInt(); k > 0; k--) {
                kept.addLast(in.readDouble());
            }
        }
    }

    /** {@code maxForever}/{@code minForever}: a removal is one more value to compare, so
     *  a group that has had a value is never forgotten. */
    static final class Forever extends KeptAggregate {
        final boolean max;
        Double kept;

        Forever(boolean max, int argument) {
            super(argument);
            this.max = max;
        }

        @Override
        void add(double value, Object plain) {
            if (!Double.isNaN(value)
                    && (kept == null || (max ? kept < value : kept > value))) {
                kept = value;
            }
        }

        @Override
        void remove(double value, Object plain) {
            add(value, plain);
        }

        @Override
        Object value(boolean integral) {
            return extreme(kept, integral);
        }

        @Override
        boolean fresh() {
            return kept == null;
        }

        @Override
        void write(DataOutputStream out) throws IOException {
            out.writeDouble(kept == null ? Double.NaN : kept);
        }

        @Override
        void read(DataInputStream in) throws IOException {
            double value = in.readDouble();
            kept = Double.isNaN(value) ? null : value;
        }
    }

    /** {@code stdDev}: the population standard deviation by Welford's update, and its exact
     *  inverse on removal (which may leave a tiny negative sum of squares: NaN, as the
     *  reference's {@code Math.sqrt} gives). */
    static final class Deviation extends KeptAggregate {
        double mean;
        double squares;
        double sum;
        long count;

        Deviation(int argument) {
            super(argument);
        }

        @Override
        void add(double value, Object plain) {
            if (Double.isNaN(value)) {
                return;
            }
            count += 1;
            if (count == 1) {
                sum = value;
                mean = value;
                squares = 0.0;
                return;
            }
            double old = mean;
            sum += value;
            mean = sum / count;
            squares += (value - old) * (value - mean);
        }

        @Override
        void remove(double value, Object plain) {
            if (Double.isNaN(value)) {
                return;
            }
            count -= 1;
            if (count == 0) {
                mean = 0.0;
                squares = 0.0;
                sum = 0.0;
                return;
            }
            double old = mean;
            sum -= value;
            mean = sum / count;
            squares -= (value - old) * (value - mean);
        }

        @Override
        Object value(boolean integral) {
            if (count == 0) {
                return null;
            }
            return count == 1 ? 0.0 : Math.sqrt(squares / count);
        }

        @Override
        boolean fresh() {
            return count == 0 && sum == 0.0 && mean == 0.0 && squares == 0.0;
        }

        @Override
        void write(DataOutputStream out) throws IOException {
            out.writeDouble(mean);
            out.writeDouble(squares);
            out.writeDouble(sum);
            out.writeLong(count);
        }

        @Override
        void read(DataInputStream in) throws IOException {
            mean = in.readDouble();
            squares = in.readDouble();
            sum = in.readDouble();
            count = in.readLong();
        }
    }

    /** {@code and}/{@code or} of a bool: how many trues and falses are in the window. */
    static final class Logical extends KeptAggregate {
        final boolean and;
        long trues;
        long falses;

        Logical(boolean and, int argument) {
            super(argument);
            this.and = and;
        }

        @Override
        void add(double value, Object plain) {
            tally(value, 1);
        }

        @Override
        void remove(double value, Object plain) {
            tally(value, -1);
        }

        /** Counts a non-null bool in or out ({@code by}: +1 or -1). */
        private void tally(double value, long by) {
            if (Double.isNaN(value)) {
                return;
            }
            if (value != 0.0) {
                trues += by;
            } else {
                falses += by;
            }
        }

        @Override
        Object value(boolean integral) {
            return and ? trues > 0 && falses == 0 : trues > 0;
        }

        @Override
        boolean fresh() {
            return trues == 0 && falses == 0;
        }

        @Override
        void write(DataOutputStream out) throws IOException {
            out.writeLong(trues);
            out.writeLong(falses);
        }

        @Override
        void read(DataInputStream in) throws IOException {
            trues = in.readLong();
            falses = in.readLong();
        }
    }

    /** {@code distinctCount}: how many distinct values (null among them, each by its own
     *  {@code equals}: NaN is one value, -0.0 another than 0.0) are in the window. */
    static final class Distinct extends KeptAggregate {
        final Map<Object, Long> counts = new HashMap<>();

        Distinct(int argument) {
            super(argument);
        }

        @Override
        boolean readsPlain() {
            return true;
        }

        @Override
        void add(double value, Object plain) {
            counts.merge(plain == null ? NULL : plain, 1L, Long::sum);
        }

        @Override
        void remove(double value, Object plain) {
            Object key = plain == null ? NULL : plain;
            Long left = counts.get(key);
            if (left == null) {
                return;
            }
            if (left > 1) {
                counts.put(key, left - 1);
            } else {
                counts.remove(key);
            }
        }

        @Override
        Object value(boolean integral) {
            return (long) counts.size();
        }

        @Override
        boolean fresh() {
            return counts.isEmpty();
        }

        @Override
        void write(DataOutputStream out) throws IOException {
            out.writeInt(counts.size());
            for (Map.Entry<Object, Long> entry : counts.entrySet()) {
                StateValues.write(out, entry.getKey() == NULL ? null : entry.getKey());
                out.writeLong(entry.getValue());
            }
        }

        @Override
        void read(DataInputStream in) throws IOException {
            for (int k = in.readInt(); k > 0; k--) {
                Object key = StateValues.read(in);
                counts.put(key == null ? NULL : key, in.readLong());
            }
        }

        /** The key of a null value (a map's null key would do, but reads less plainly). */
        private static final Object NULL = new Object();
    }
}
