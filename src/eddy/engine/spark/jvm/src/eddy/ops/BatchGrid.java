package eddy.ops;

import java.io.Serializable;

/**
 * Where the batches of an {@code #window.externalTimeBatch(a, t [, start])} lie on its
 * timestamp attribute: a grid of {@code t} from a start — the first event's attribute, a
 * constant {@code start} or the first event's {@code start} attribute — as the runtime sets
 * it: a constant start puts the first end on the grid after the first event; a start read
 * from the first event or none ends the first batch {@code t} after the start.
 */
final class BatchGrid implements Serializable {
    private static final long serialVersionUID = 1L;

    private final long span;
    /** The constant start, or null. */
    private final Long constant;
    /** Whether the start is an attribute of the first event (the row's column after the
     *  timestamp attribute). */
    private final boolean attribute;

    /** {@code spec}: empty (no start), {@code c<start>} or {@code a} (an attribute). */
    BatchGrid(String spec, long span) {
        this.span = span;
        this.constant = spec.startsWith("c") ? Long.valueOf(spec.substring(1)) : null;
        this.attribute = "a".equals(spec);
    }

    /** The first batch's end and the grid's start, for a first event at {@code time} whose
     *  start attribute (if the grid reads one) is {@code start}. */
    long[] first(long time, Object start) {
        if (constant != null) {
            return new long[] {next(time, constant), constant};
        }
        if (attribute) {
            if (start == null) {
                throw new IllegalStateException("#window.externalTimeBatch: the first event "
                        + "has no value of its start time attribute");
            }
            long from = ((Number) start).longValue();
            return new long[] {from + span, from};
        }
        return new long[] {time + span, time};
    }

    /** Whether the row carries a start attribute for the grid. */
    boolean readsAttribute() {
        return attribute;
    }

    /** The grid's next end after {@code time} (Java's remainder: before the start too). */
    long next(long time, long start) {
        return time + (span - (time - start) % span);
    }
}
