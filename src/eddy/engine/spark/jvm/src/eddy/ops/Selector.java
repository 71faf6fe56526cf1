package eddy.ops;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.StructType;

/**
 * The query's selector over a {@link WindowAggregate}'s window, as the per-event runtime's
 * selector runs it: which events go out (current, expired or both), with which selected
 * values ({@code kinds}, see the operator's class comment), after the {@code having} and the
 * {@link Ordering}. A row's own output goes out at once ({@link #emitCurrent}); when expired
 * events are outputs or the window is a batch, an emission is collected in a {@link Chunk}
 * and goes out as the runtime's selector sees a chunk: at once — then through the query's
 * {@link RateLimit}, if it has one (every emission is then a chunk).
 */
final class Selector implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Per selected attribute: its kind's letter, its index (column or argument), and
     *  whether it goes out as an int; parsed once, not per row. */
    final char[] kinds;
    final int[] indexes;
    private final boolean[] integral;
    /** Which events go out. */
    final boolean current;
    final boolean expired;
    /** The first selected value's position in an output row (after {@code _seq},
     *  {@code _ts} and, for chunked emissions, {@code _i}, {@code _x}, {@code _timer}, a
     *  {@code timeBatch}'s {@code _n} and a timed rate limit's {@code _r}). */
    final int firstValue;
    /** The positions of {@code _n} (which of a row's due timers emitted the event) and
     *  {@code _r} (the rate limit's timer did), or -1. */
    private final int firingAt;
    private final int limiterAt;
    /** The query's output rate limit, or null. */
    final RateLimit limit;
    /** The {@code having} condition over the selected values, or null. */
    private final Expression having;
    /** The query's {@code order by}, {@code offset} and {@code limit}, or null. */
    private final Ordering ordering;
    /** Neither {@code group by} nor an aggregate: every selected event of a chunk goes out. */
    private final boolean everyEvent;
    /** An aggregate without {@code group by}: a chunk's last selected event alone. */
    private final boolean lastOnly;

    /** {@code holds}: the window's events wait before they count (a batch, a delay), so
     *  its outputs are emissions; {@code firing}: a {@code timeBatch}'s, which say which of
     *  a row's due timers emitted them. */
    Selector(String[] kinds, String events, boolean holds, boolean firing, int groups,
             Expression having, Ordering ordering, String rate, StructType output) {
        this.current = !"expired".equals(events);
        this.expired = !"current".equals(events);
        this.limit = RateLimit.parse(rate, groups, output.fields().length);
        this.firingAt = firing ? 5 : -1;
        this.limiterAt = limit != null && limit.scheduled() ? (firing ? 6 : 5) : -1;
        // every emission a chunk (_i, _x, _timer): expired events out, a window that holds
        // its events, or a rate limit that does
        boolean chunked = expired || holds || limit != null;
        this.firstValue = Math.max(firingAt, limiterAt) > 0 ? Math.max(firingAt, limiterAt) + 1
                : chunked ? 5 : 2;
        this.having = having;
        this.ordering = ordering;
        this.kinds = new char[kinds.length];
        this.indexes = new int[kinds.length];
        this.integral = new boolean[kinds.length];
        boolean aggregates = false;
        for (int i = 0; i < kinds.length; i++) {
            this.kinds[i] = kinds[i].charAt(0);
            this.indexes[i] = kinds[i].length() > 1
                    ? Integer.parseInt(kinds[i].substring(1)) : -1;
            integral[i] = output.fields()[firstValue + i].dataType() instanceof IntegerType;
            aggregates |= this.kinds[i] != 'v';
        }
        this.everyEvent = groups == 0 && !aggregates;
        this.lastOnly = groups == 0 && aggregates;
    }

    /** The number of selected plain columns the kinds read ({@code v} and {@code u}). */
    int plainsRead() {
        int plain = 0;
        for (int i = 0; i < kinds.length; i++) {
            if (kinds[i] == 'v' || kinds[i] == 'u') {
                plain = Math.max(plain, indexes[i] + 1);
            }
        }
        return plain;
    }

    boolean selects(char kind) {
        for (char each : kinds) {
            if (each == kind) {
                return true;
            }
        }
        return false;
    }

    /** One emission's selected outputs, per group in order of its first selected event
     *  (the value: the output right after the group's last selected event). One chunk
     *  serves every emission of a call, emptied by {@link #emitTo}. */
    final class Chunk {
        private final Map<Object, Object[]> outputs = new LinkedHashMap<>();
        /** Each output's group (a rate limit with {@code group by} reads it). */
        private final Map<Object[], Object> groupOf = new IdentityHashMap<>();
        /** The row being processed, and its window's rate limit state. */
        private long seq;
        private RateLimit.State limited;

        /** The row at {@code seq} and {@code ts} comes to a window whose rate limit state is
         *  {@code limited}: the limit's clock moves. */
        void startRow(long seq, long ts, RateLimit.State limited) {
            this.seq = seq;
            this.limited = limited;
            if (limit != null) {
                limit.advance(limited, ts);
            }
        }

        /** The row is done: the rate limit's timer flushes if it fell due and no emission
         *  of the row's own came to flush it first. */
        void endRow(List<Row> out) {
            flushDue(out);
        }

        private void flushDue(List<Row> out) {
            List<Object[]> flushed = limit == null ? null : limit.pendingFlush(limited);
            if (flushed != null) {
                stamp(flushed, out, true, 0, true);
            }
        }

        void select(WindowGroup group, Object[] plain, long ts, boolean leaving) {
            if (leaving ? !expired : !current) {
                return;
            }
            // without a having, the values go straight into the output (the seed's hot path)
            Object[] values = having == null ? null : selected(group, plain);
            if (values != null && !passes(values)) {
                return;
            }
            Object key = everyEvent ? Integer.valueOf(outputs.size()) : group.key;
            Object[] emitted = outputs.get(key);  // a later event of the group replaces it
            if (emitted == null) {
                emitted = new Object[firstValue + kinds.length];
                outputs.put(key, emitted);
                groupOf.put(emitted, group.key);
            }
            emitted[1] = ts;
            emitted[3] = leaving;
            for (int i = 0; i < kinds.length; i++) {
                emitted[firstValue + i] = values != null ? values[i] : value(i, group, plain);
            }
        }

        /** {@code which}: which of the timers due at one row emits (a {@code timeBatch}). */
        void emitTo(List<Row> out, boolean timer, int which) {
            Collection<Object[]> events = outputs.values();
            if (ordering != null) {
                events = lastOnly ? ordering.keepsOne() ? events : List.of()
                        : ordering.apply(new ArrayList<>(events), firstValue, 3);
            }
            if (limit != null) {
                if (!timer) {
                    flushDue(out);  // the limit's timer fires before the row's own emission
                }
                List<Object> groups = new ArrayList<>(events.size());
                for (Object[] emitted : events) {
                    groups.add(groupOf.get(emitted));
                }
                events = events.isEmpty() ? events
                        : limit.process(limited, new ArrayList<>(events), groups);
            }
            stamp(events, out, timer, which, false);
            outputs.clear();
            groupOf.clear();
        }

        /** The events of one emission go out at the row being processed. */
        private void stamp(Collection<Object[]> events, List<Row> out, boolean timer,
                           int which, boolean limiter) {
            int position = 0;
            for (Object[] emitted : events) {
                emitted[0] = seq;
                emitted[2] = position++;
                emitted[4] = timer;
                if (firingAt > 0) {
                    emitted[firingAt] = which;
                }
                if (limiterAt > 0) {
                    emitted[limiterAt] = limiter;
                }
                out.add(RowFactory.create(emitted));
            }
        }
    }

    /** A passing row's own output when only current events go out (unless the
     *  {@code having} rejects it); its selected plain columns start at {@code plainAt}. */
    void emitCurrent(Row row, WindowGroup group, long ts, List<Row> out, int plainAt) {
        Object[] emitted = new Object[2 + kinds.length];
        emitted[0] = row.getLong(0);
        emitted[1] = ts;
        for (int i = 0; i < kinds.length; i++) {
            emitted[2 + i] = kinds[i] == 'v' ? row.get(plainAt + indexes[i])
                    : value(i, group, null);
        }
        if (having != null) {
            Object[] values = new Object[kinds.length];
            System.arraycopy(emitted, 2, values, 0, values.length);
            if (!passes(values)) {
                return;
            }
        }
        if (ordering == null || ordering.keepsOne()) {
            out.add(RowFactory.create(emitted));
        }
    }

    /** The selected values of an event of {@code group} as they go out now. */
    private Object[] selected(WindowGroup group, Object[] plain) {
        Object[] values = new Object[kinds.length];
        for (int i = 0; i < kinds.length; i++) {
            values[i] = value(i, group, plain);
        }
        return values;
    }

    private boolean passes(Object[] values) {
        return Expression.truthy(having.evaluate(values, null));
    }

    /** Selected attribute {@code output} of {@code group} as it is now ({@code plain}: the
     *  event's selected plain values). */
    private Object value(int output, WindowGroup group, Object[] plain) {
        char what = kinds[output];
        if (what == 'c') {
            return group.size;
        }
        int index = indexes[output];
        if (what == 'v') {
            return plain[index];
        }
        KeptAggregate kept = group.kept[output];
        if (kept != null) {
            return kept.value(integral[output]);
        }
        if (group.counts[index] == 0) {
            return null;
        }
        if (what == 'l') {
            return group.longSums[index];
        }
        return what == 's' ? group.sums[index] : group.sums[index] / group.counts[index];
    }
}
