package eddy.ops;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.StructType;

/**
 * A Siddhi {@code #window.time(t)}, {@code #window.length(n)},
 * {@code #window.timeLength(t, n)}, {@code #window.externalTime(a, t)},
 * {@code #window.externalTimeBatch(a, t)}, {@code #window.sort(n, a, ...)},
 * {@code #window.lengthBatch(n)} or
 * {@code #window.timeBatch(t)} — or no window at all (current events only) — with
 * {@code avg}/{@code sum}/{@code count()}/{@code max}/{@code min} and the aggregates of
 * {@link KeptAggregate} per group, optionally {@code having} and
 * {@code order by}/{@code offset}/{@code limit} ({@link Ordering}), current, expired or all
 * events out, run inside the JVM (Spark's {@code flatMapGroupsWithState}) instead of a
 * Python worker: the rows never cross into Python. ({@code externalTime}, {@code sort} and
 * the batch windows are described at {@link #externalStep}, {@link #sortStep},
 * {@link #batchStep}, {@link #timeBatchStep} and {@link #externalBatchStep}.)
 *
 * <p>It follows the per-event runtime step by step, as the NumPy kernel
 * ({@code eddy.engine.operators.window_aggregates.sliding_time}) does: rows in {@code _seq}
 * order; every row moves the clock to the largest timestamp seen; the window's FIFO queue
 * then loses each head whose timestamp is at most {@code clock - span} (the head first, so
 * a younger event never leaves before an older one), subtracting its values from its group's
 * running sums ({@code sum -= v} in doubles, in queue order); a row that passes the query's
 * filters then enters ({@code sum += v}) and emits its group's aggregates. A length window
 * has no clock: a passing row that finds it full first pushes out its head. A null (or NaN)
 * argument changes no sum and no count but still yields an output; {@code count()} counts
 * the group's events in the window; a group whose sums, counts and size are back to zero is
 * forgotten, as the runtime's {@code canDestroy} does. {@code sum} of an int or long argument
 * is a long as the runtime keeps it: it adds in wrapping {@code long} arithmetic and removes
 * in doubles ({@code (long) ((double) sum - v)}, the overload the reference picks).
 * {@code having} (an {@link Expression} over the selected values, side 0) is evaluated on
 * every selected event with the values it goes out with; an event it rejects is not
 * emitted, nor does it take its group's place in a chunk (the runtime's selector).
 *
 * <p>When expired events are outputs too ({@code insert all events}/{@code expired events})
 * an event must leave exactly when, and in the emission where, the runtime lets it go (as
 * {@code eddy.engine.operators.window_aggregates.expiring} does, vectorised): each queued
 * event keeps {@code M}, the largest timestamp of the passing events up to it; a passing
 * event with a timestamp above every earlier one asks for a timer at {@code ts + span}; a row
 * that is not late ({@code ts >=} the clock before it) fires the timers it reached, and the
 * first one expires every head with {@code M <= clock - span} as one emission; a passing row
 * expires the same way (a length window: pushes out its head when full), then enters, and
 * emits {@code [expired..., current]} as one chunk. The selector sees a chunk at once: per
 * group, in order of the group's first selected event, the last selected event goes out with
 * the group's aggregates as they were right after it (without {@code group by}: the
 * chunk's last; with neither {@code group by} nor an aggregate: every selected event). An
 * expired event carries its own selected values and the clock as its timestamp.
 *
 * <p>Input row layout (positions): {@code _seq} long, {@code _ts} long, event (false: an
 * on-demand query row, refused), passes (boolean), the state key (int), then the group
 * columns, the arguments (doubles, or longs where {@code argumentTypes} says so) and the
 * selected plain columns, in the order the caller declares them, then (an {@code externalTime}
 * window) its timestamp attribute, then (in a partition) the partition value. Output:
 * {@code _seq}, {@code _ts}, (when expired events are outputs or the window is a batch:
 * {@code _i} the position in its emission, {@code _x} expired, {@code _timer} emitted by the
 * window's timer, and for a {@code timeBatch} {@code _n}: which of the timers due at the row,)
 * then one column per selected attribute ({@code kinds}: {@code v<i>} the i-th selected plain
 * column, {@code c} the count, {@code s<i>}/{@code a<i>}/{@code M<i>}/{@code m<i>} the
 * sum/average/maximum/minimum of argument i, {@code l<i>} the long sum of an integral
 * argument i, {@code F<i>}/{@code f<i>} its {@code maxForever}/{@code minForever},
 * {@code d<i>} its {@code stdDev}, {@code &<i>}/{@code |<i>} the {@code and}/{@code or} of a
 * bool argument i, {@code u<i>} the {@code distinctCount} of the i-th plain column; an extreme
 * of an int argument goes out as an int).
 *
 * <p>State, one binary value per state key: the clock, the largest passing timestamp, the
 * pending timers (a {@code timeBatch}: its next end), each group's key, sums, long sums,
 * counts, kept aggregates and size, the queue (with each event's selected values when
 * expired events are outputs or a {@code distinctCount} is selected) and a batch window's
 * events waiting for their batch; written whole each micro-batch (the window of one key;
 * in a value partition, each value's window: Siddhi gives each partition key its own).
 */
public final class WindowAggregate implements
        FlatMapGroupsWithStateFunction<Integer, Row, byte[], Row>, Serializable {
    private static final long serialVersionUID = 1L;
    private static final int FIRST = 5;

    private final boolean length;
    /** {@code timeLength(t, n)}: a time window of at most {@link #size} events, each leaving
     *  by its own timestamp (a length eviction can let a younger event out first) and asking
     *  for a timer at its timestamp plus {@code t}. */
    private final boolean timeLength;
    private final long size;
    /** {@code externalTime}: the clock is a timestamp attribute (after the plain columns). */
    private final boolean external;
    /** {@code externalTimeBatch(a, t)}: see {@link #externalBatchStep}. */
    private final boolean externalBatch;
    /** No window: every passing event aggregates and none ever leaves (current events). */
    private final boolean unbounded;
    /** {@code lengthBatch}: see {@link #batchStep}. */
    private final boolean batch;
    /** {@code timeBatch}: see {@link #timeBatchStep}. */
    private final boolean timed;
    /** {@code sort(n, a [, order], ...)}: see {@link #sortStep}; the plain columns it sorts
     *  by and their directions. */
    private final boolean sort;
    private final int[] sortBy;
    private final boolean[] sortAscending;
    /** Each value of a partition (a row's last column; null: a row that only moves the
     *  clock) has a window of its own, all of them on the clock of the rows they see. */
    private final boolean partitioned;
    private final WindowState.Codec codec;
    /** Which events go out: current ones, expired ones, or both (when expired ones do, the
     *  window follows the runtime's timers and chunks: see the class comment). */
    private final boolean current;
    private final boolean expired;
    /** Neither {@code group by} nor an aggregate: every selected event of a chunk goes out. */
    private final boolean everyEvent;
    /** An aggregate without {@code group by}: a chunk's last selected event alone. */
    private final boolean lastOnly;
    /** The query's {@code order by}, {@code offset} and {@code limit}, or null. */
    private final Ordering ordering;
    /** Whether the window's events keep their selected plain values: to go out as expired
     *  events, or to leave a {@code distinctCount}. */
    private final boolean keepsPlain;
    private final int plains;
    private final int firstValue;
    private final long span;
    private final int groups;
    private final int arguments;
    /** Per argument: whether it is an int or long column (its row value a Long). */
    private final boolean[] integralArgument;
    /** Per argument: whether a long sum of it is selected (only then is it in the state, so
     *  that the state of a query without one reads as it did before long sums). */
    private final boolean[] longSummed;
    /** The {@code having} condition over the selected values, or null. */
    private final Expression having;
    /** Per selected attribute: its kind's letter, its index (column or argument), and
     *  whether it goes out as an int; parsed once, not per row. */
    private final char[] kinds;
    private final int[] indexes;
    private final boolean[] integral;

    private WindowAggregate(String window, String events, long span, long size, int groups,
                            String argumentTypes, String[] kinds, Expression having,
                            Ordering ordering, String[] sortKeys, boolean partitioned,
                            StructType output) {
        this.partitioned = partitioned;
        this.ordering = ordering;
        this.length = "length".equals(window);
        this.timeLength = "timeLength".equals(window);
        this.size = size;
        this.external = "externalTime".equals(window);
        this.externalBatch = "externalTimeBatch".equals(window);
        this.unbounded = "none".equals(window);
        this.batch = "lengthBatch".equals(window);
        this.timed = "timeBatch".equals(window);
        this.sort = "sort".equals(window);
        this.sortBy = new int[sortKeys.length];
        this.sortAscending = new boolean[sortKeys.length];
        for (int i = 0; i < sortKeys.length; i++) {
            sortBy[i] = Integer.parseInt(sortKeys[i].substring(0, sortKeys[i].length() - 1));
            sortAscending[i] = sortKeys[i].endsWith("a");
        }
        this.current = !"expired".equals(events);
        this.expired = !"current".equals(events);
        this.firstValue = timed ? 6 : expired || batch || externalBatch ? 5 : 2;
        this.span = span;
        this.groups = groups;
        this.arguments = argumentTypes.length();
        this.integralArgument = new boolean[arguments];
        for (int i = 0; i < arguments; i++) {
            integralArgument[i] = argumentTypes.charAt(i) == 'l';
        }
        this.having = having;
        this.kinds = new char[kinds.length];
        this.indexes = new int[kinds.length];
        this.integral = new boolean[kinds.length];
        for (int i = 0; i < kinds.length; i++) {
            this.kinds[i] = kinds[i].charAt(0);
            this.indexes[i] = kinds[i].length() > 1
                    ? Integer.parseInt(kinds[i].substring(1)) : -1;
            integral[i] = output.fields()[firstValue + i].dataType() instanceof IntegerType;
        }
        this.longSummed = new boolean[arguments];
        for (int i = 0; i < kinds.length; i++) {
            if (this.kinds[i] == 'l') {
                longSummed[indexes[i]] = true;
            }
        }
        int plain = 0;
        boolean aggregates = false;
        boolean distinct = false;
        for (int i = 0; i < kinds.length; i++) {
            if (this.kinds[i] == 'v' || this.kinds[i] == 'u') {
                plain = Math.max(plain, indexes[i] + 1);
            }
            aggregates |= this.kinds[i] != 'v';
            distinct |= this.kinds[i] == 'u';
        }
        for (int index : sortBy) {
            plain = Math.max(plain, index + 1);
        }
        this.plains = plain;
        this.everyEvent = groups == 0 && !aggregates;
        this.lastOnly = groups == 0 && aggregates;
        this.keepsPlain = expired || distinct || sort;
        this.codec = new WindowState.Codec(groups, arguments, plains, keepsPlain,
                batch || timed || externalBatch, longSummed, this.kinds, indexes);
    }

    /**
     * The outputs of {@code rows} (laid out as the class says) in {@code output}'s schema;
     * {@code argumentTypes} one letter per argument ({@code d} a double, {@code l} an int or
     * long), {@code kinds} as a comma-separated list, {@code events} {@code current},
     * {@code expired} or {@code all}, {@code having} the condition's JSON or empty;
     * {@code size} a {@code timeLength}'s events; {@code ordering} the {@link Ordering}'s
     * JSON or empty; {@code partitioned}: the rows end with a partition value (each value
     * its own window).
     */
    public static Dataset<Row> apply(Dataset<Row> rows, String window, String events,
                                     long span, long size, int groups, String argumentTypes,
                                     String kinds, String having, String ordering,
                                     String sortKeys, boolean partitioned, StructType output)
            throws IOException {
        ObjectMapper json = new ObjectMapper();
        Expression condition = having.isEmpty() ? null : Expression.parse(json.readTree(having));
        WindowAggregate step = new WindowAggregate(window, events, span, size, groups,
                argumentTypes, items(kinds), condition,
                ordering.isEmpty() ? null : Ordering.parse(json.readTree(ordering)),
                items(sortKeys), partitioned, output);
        return KeyColumn.grouped(rows, 4)
                .flatMapGroupsWithState(step, OutputMode.Append(), Encoders.BINARY(),
                        Encoders.row(output), GroupStateTimeout.NoTimeout());
    }

    /** The items of a comma-separated list (none in an empty one). */
    private static String[] items(String list) {
        return list.isEmpty() ? new String[0] : list.split(",");
    }

    /** One emission's selected outputs, per group in order of its first selected event
     *  (the value: the output right after the group's last selected event). One chunk
     *  serves every emission of a call, emptied by {@link #emitTo}. */
    final class Chunk {
        final Map<Object, Object[]> outputs = new LinkedHashMap<>();

        void select(WindowGroup group, Object[] plain, long seq, long ts, boolean leaving) {
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
            }
            emitted[0] = seq;
            emitted[1] = ts;
            emitted[3] = leaving;
            for (int i = 0; i < kinds.length; i++) {
                emitted[firstValue + i] = values != null ? values[i] : value(i, group, plain);
            }
        }

        /** {@code firing}: which of the timers due at one row emits (a {@code timeBatch}). */
        void emitTo(List<Row> out, boolean timer, int firing) {
            int position = 0;
            Collection<Object[]> events = outputs.values();
            if (ordering != null) {
                events = lastOnly ? ordering.keepsOne() ? events : List.of()
                        : ordering.apply(new ArrayList<>(events), firstValue, 3);
            }
            for (Object[] emitted : events) {
                emitted[2] = position++;
                emitted[4] = timer;
                if (timed) {
                    emitted[5] = firing;
                }
                out.add(RowFactory.create(emitted));
            }
            outputs.clear();
        }
    }

    @Override
    public Iterator<Row> call(Integer key, Iterator<Row> input, GroupState<byte[]> state) {
        List<Row> rows = new ArrayList<>();
        input.forEachRemaining(rows::add);
        rows.sort((a, b) -> Long.compare(a.getLong(0), b.getLong(0)));
        WindowState.Keyed keyed = !partitioned ? null
                : state.exists() ? codec.readKeyed(state.get()) : new WindowState.Keyed();
        WindowState window = partitioned ? null
                : state.exists() ? codec.read(state.get()) : new WindowState();
        List<Row> out = new ArrayList<>();
        int argumentsAt = FIRST + groups;
        int plainAt = argumentsAt + arguments;
        Chunk chunk = new Chunk();
        for (Row row : rows) {
            if (!row.getBoolean(2)) {
                throw new IllegalStateException("on-demand queries need tables, which this "
                        + "operator does not keep");
            }
            long ts = row.getLong(1);
            if (partitioned) {  // the value's own window, on the group's clock before the row
                long clock = keyed.clock;
                keyed.clock = Math.max(clock, ts);
                Object value = row.get(row.length() - 1);
                if (value == null) {
                    continue;  // another stream's row: it only moves the clock
                }
                window = keyed.windows.computeIfAbsent(value, k -> new WindowState());
                window.clock = clock;
            }
            if (external) {
                externalStep(window, chunk, row, ts, out, argumentsAt, plainAt);
                continue;
            }
            if (externalBatch) {
                externalBatchStep(window, chunk, row, ts, out, argumentsAt, plainAt);
                continue;
            }
            boolean late = ts < window.clock;
            window.clock = Math.max(window.clock, ts);
            if (batch) {
                batchStep(window, chunk, row, ts, out, argumentsAt, plainAt);
                continue;
            }
            if (timed) {
                timeBatchStep(window, chunk, row, ts, out, argumentsAt, plainAt);
                continue;
            }
            if (sort) {
                sortStep(window, chunk, row, ts, out, argumentsAt, plainAt);
                continue;
            }
            if (expired) {
                expiringStep(window, chunk, row, ts, late, out, argumentsAt, plainAt);
                continue;
            }
            long threshold = window.clock - span;
            while (!length && !window.queue.isEmpty()
                    && window.queue.peekFirst().ts <= threshold) {
                remove(window, window.queue.pollFirst());
            }
            if (!row.getBoolean(3)) {
                continue;
            }
            if (window.queue.size() >= (timeLength ? size : length ? span : Long.MAX_VALUE)) {
                remove(window, window.queue.pollFirst());  // the new event pushes out the head
            }
            window.last = Math.max(window.last, ts);
            WindowGroup group = enter(window, row, timeLength ? ts : window.last, argumentsAt,
                    keepsPlain ? plainValues(row, plainAt) : null);
            emitCurrent(row, group, ts, out, plainAt);
        }
        state.update(partitioned ? codec.writeKeyed(keyed) : codec.write(window));
        return out.iterator();
    }

    /** A passing row's own output when only current events go out (unless the
     *  {@code having} rejects it). */
    private void emitCurrent(Row row, WindowGroup group, long ts, List<Row> out, int plainAt) {
        Object[] emitted = new Object[2 + kinds.length];
        emitted[0] = row.getLong(0);
        emitted[1] = ts;
        for (int i = 0; i < kinds.length; i++) {
            emitted[2 + i] = kinds[i] == 'v' ? row.get(plainAt + indexes[i])
                    : value(i, group, null);
        }
        if ((having == null || passesAt(emitted, 2))
                && (ordering == null || ordering.keepsOne())) {
            out.add(RowFactory.create(emitted));
        }
    }

    /**
     * One row of an {@code externalTime(attribute, t)} window, as the runtime runs it: only
     * a passing row reaches the window; its timestamp attribute is the clock (it may go
     * back), the heads with an attribute at most {@code clock - t} leave (the head first),
     * as expired events stamped with the clock, then the row enters; no timers.
     */
    private void externalStep(WindowState window, Chunk chunk, Row row, long ts,
                              List<Row> out, int argumentsAt, int plainAt) {
        if (!row.getBoolean(3)) {
            return;
        }
        long now = externalClock(row, plainAt);
        long seq = row.getLong(0);
        window.clock = now;
        while (!window.queue.isEmpty() && window.queue.peekFirst().ts - now + span <= 0) {
            if (expired) {
                leave(window, chunk, seq);
            } else {
                remove(window, window.queue.pollFirst());
            }
        }
        Object[] plain = keepsPlain ? plainValues(row, plainAt) : null;
        WindowGroup group = enter(window, row, now, argumentsAt, plain);
        if (expired) {
            chunk.select(group, plain, seq, ts, false);
            chunk.emitTo(out, false, 0);
        } else {
            emitCurrent(row, group, ts, out, plainAt);
        }
    }

    /** A passing row's timestamp attribute (after the plain columns). */
    private long externalClock(Row row, int plainAt) {
        int clockAt = plainAt + plains;
        if (row.isNullAt(clockAt)) {
            throw new IllegalStateException("#window.externalTime: an event without a value "
                    + "of its timestamp attribute");
        }
        return row.getLong(clockAt);
    }

    /**
     * One row of an {@code externalTimeBatch(attribute, t)} window, as the runtime runs it:
     * only a passing row reaches it; the first sets the first batch's end at its attribute
     * plus {@code t} (the batches' grid starts there); the clock is the largest attribute
     * seen (from 0); an event before the end waits in the batch, one at or past it first
     * flushes the batch ({@link #flush}: expired events stamped with the clock) for its own
     * row, moves the end to the grid's next after the clock, then waits. The timers hold the
     * end and the grid's start; {@code last} the clock. No timer fires: without a timeout
     * only events close a batch.
     */
    private void externalBatchStep(WindowState window, Chunk chunk, Row row, long ts,
                                   List<Row> out, int argumentsAt, int plainAt) {
        if (!row.getBoolean(3)) {
            return;
        }
        long time = externalClock(row, plainAt);
        if (window.timers.isEmpty()) {
            window.timers.addLast(time + span);
            window.timers.addLast(time);
            window.last = 0;
        }
        long end = window.timers.peekFirst();
        long start = window.timers.peekLast();
        window.last = Math.max(window.last, time);
        if (time >= end) {
            window.clock = window.last;
            flush(window, chunk, row.getLong(0));
            chunk.emitTo(out, false, 0);
            window.timers.clear();
            window.timers.addLast(window.last + (span - (window.last - start) % span));
            window.timers.addLast(start);
        }
        hold(window, row, ts, argumentsAt, plainAt);
    }

    /**
     * One row of a {@code lengthBatch(n)} window, as the runtime runs it: a passing event
     * waits; the n-th flushes the batch ({@link #flush}), emitted for the row that filled it.
     */
    private void batchStep(WindowState window, Chunk chunk, Row row, long ts, List<Row> out,
                           int argumentsAt, int plainAt) {
        if (!row.getBoolean(3)) {
            return;
        }
        hold(window, row, ts, argumentsAt, plainAt);
        if (window.pending.size() >= span) {
            flush(window, chunk, row.getLong(0));
            chunk.emitTo(out, false, 0);
        }
    }

    /**
     * One row of a {@code timeBatch(t)} window, as the runtime runs it: the first passing
     * event sets the first batch's end at the clock plus {@code t}, and each end the next at
     * {@code t} after it (the window's timer, its one entry in the timers); a row of any
     * stream whose clock reaches the end first fires the timer — the batch is flushed
     * ({@link #flush}) as the timer's emission, even when it is empty (the previous batch's
     * expired events still leave), and the end moves {@code t} on; when the clock has
     * reached that one too it fires as well, as the runtime's scheduler fires every due
     * timer (the timer's second emission: the batch just flushed leaves as expired events;
     * the ends after it find nothing to emit) — then, if it passes, the row waits in the
     * next batch.
     */
    private void timeBatchStep(WindowState window, Chunk chunk, Row row, long ts,
                               List<Row> out, int argumentsAt, int plainAt) {
        Long end = window.timers.peekFirst();
        if (end != null && window.clock >= end) {
            long seq = row.getLong(0);
            long next = end + span;
            flush(window, chunk, seq);
            chunk.emitTo(out, true, 0);
            if (window.clock >= next) {  // the next end fires too: the batch just out expires
                flush(window, chunk, seq);
                chunk.emitTo(out, true, 1);
                next += ((window.clock - next) / span + 1) * span;  // the rest emit nothing
            }
            window.timers.clear();
            window.timers.addLast(next);
        }
        if (!row.getBoolean(3)) {
            return;
        }
        if (end == null) {
            window.timers.addLast(window.clock + span);
        }
        hold(window, row, ts, argumentsAt, plainAt);
    }

    /**
     * One row of a {@code sort(n, ...)} window, as the runtime runs it: a passing event
     * enters (and, its chunk's first event, takes its group's aggregates as they are then);
     * when the window holds more than {@code n}, its events are sorted (stably, by the sort
     * attributes; the order stays for the next sort) and the last leaves, an expired event
     * stamped with the clock, after the current one in the same chunk.
     */
    private void sortStep(WindowState window, Chunk chunk, Row row, long ts, List<Row> out,
                          int argumentsAt, int plainAt) {
        if (!row.getBoolean(3)) {
            return;
        }
        long seq = row.getLong(0);
        Object[] plain = plainValues(row, plainAt);
        WindowGroup group = enter(window, row, ts, argumentsAt, plain);
        if (expired) {
            chunk.select(group, plain, seq, ts, false);
        } else {
            emitCurrent(row, group, ts, out, plainAt);
        }
        if (window.queue.size() > span) {
            List<WindowState.Entry> kept = new ArrayList<>(window.queue);
            kept.sort(this::compareSorted);
            window.queue.clear();
            window.queue.addAll(kept);
            WindowState.Entry last = window.queue.pollLast();
            remove(window, last);
            chunk.select(last.group, last.plain, seq, window.clock, true);
        }
        if (expired) {
            chunk.emitTo(out, false, 0);
        }
    }

    private int compareSorted(WindowState.Entry a, WindowState.Entry b) {
        for (int k = 0; k < sortBy.length; k++) {
            Object left = a.plain[sortBy[k]];
            Object right = b.plain[sortBy[k]];
            if (left == null || right == null) {
                throw new IllegalStateException("#window.sort: an event without a value of "
                        + "an attribute it sorts by cannot be ordered");
            }
            int result = Ordering.compareValues(left, right);
            if (result != 0) {
                return sortAscending[k] ? result : -result;
            }
        }
        return 0;
    }

    /** A passing row of a batch window waits for its batch, not aggregated yet. */
    private void hold(WindowState window, Row row, long ts, int argumentsAt, int plainAt) {
        double[] values = new double[arguments];
        long[] longs = new long[arguments];
        readArguments(row, argumentsAt, values, longs);
        Object key = WindowState.groupKey(groups, i -> row.get(FIRST + i));
        window.pending.add(new WindowState.Pending(ts, key, values, longs,
                plainValues(row, plainAt)));
    }

    /**
     * A batch window's flush into {@code chunk}, as one chunk of the runtime: the previous
     * batch's events as expired events stamped with the clock (when expired events are
     * outputs; each leaves its group's aggregates), then — when the batch has events — a
     * reset that forgets every group and the batch's events, each entering its group.
     */
    private void flush(WindowState window, Chunk chunk, long seq) {
        while (expired && !window.queue.isEmpty()) {
            leave(window, chunk, seq);
        }
        if (window.pending.isEmpty()) {
            return;
        }
        window.groups.clear();
        for (WindowState.Pending event : window.pending) {
            WindowGroup group = window.groups.computeIfAbsent(event.key,
                    k -> new WindowGroup(k, arguments, kinds, indexes));
            group.add(event.values, event.longs, event.plain);
            if (expired) {
                window.queue.addLast(new WindowState.Entry(0, group, event.values,
                        event.plain));
            }
            chunk.select(group, event.plain, seq, event.ts, false);
        }
        window.pending.clear();
    }

    private Object[] plainValues(Row row, int plainAt) {
        Object[] plain = new Object[plains];
        for (int i = 0; i < plains; i++) {
            plain[i] = row.get(plainAt + i);
        }
        return plain;
    }

    /** One row when expired events are outputs: the timer's emission, then the row's. */
    private void expiringStep(WindowState window, Chunk chunk, Row row, long ts, boolean late,
                              List<Row> out, int argumentsAt, int plainAt) {
        long seq = row.getLong(0);
        if (!length && !late) {
            boolean fired = false;
            while (!window.timers.isEmpty() && window.timers.peekFirst() <= window.clock) {
                window.timers.pollFirst();
                fired = true;
            }
            if (fired) {
                expire(window, chunk, seq);
                chunk.emitTo(out, true, 0);
            }
        }
        if (!row.getBoolean(3)) {
            return;
        }
        if (!length) {
            expire(window, chunk, seq);
        }
        if (window.queue.size() >= (timeLength ? size : length ? span : Long.MAX_VALUE)) {
            leave(window, chunk, seq);
        }
        Object[] plain = plainValues(row, plainAt);
        if (timeLength || !length && ts > window.last) {
            window.timers.addLast(ts + span);  // (a timeLength: every event, in its order)
        }
        window.last = Math.max(window.last, ts);
        WindowGroup group = enter(window, row, timeLength ? ts : window.last, argumentsAt,
                plain);
        chunk.select(group, plain, seq, ts, false);
        chunk.emitTo(out, false, 0);
    }

    /** Every head due by the clock leaves, into {@code chunk}. */
    private void expire(WindowState window, Chunk chunk, long seq) {
        long threshold = window.clock - span;
        while (!window.queue.isEmpty() && window.queue.peekFirst().ts <= threshold) {
            leave(window, chunk, seq);
        }
    }

    private void leave(WindowState window, Chunk chunk, long seq) {
        WindowState.Entry entry = window.queue.pollFirst();
        remove(window, entry);
        chunk.select(entry.group, entry.plain, seq, window.clock, true);
    }

    /** The row's arguments: doubles (NaN for a null) and, for the integral ones, longs. */
    private void readArguments(Row row, int argumentsAt, double[] values, long[] longs) {
        for (int i = 0; i < arguments; i++) {
            if (row.isNullAt(argumentsAt + i)) {
                values[i] = Double.NaN;
            } else if (integralArgument[i]) {
                longs[i] = row.getLong(argumentsAt + i);
                values[i] = (double) longs[i];
            } else {
                values[i] = row.getDouble(argumentsAt + i);
            }
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
        return having == null || Expression.truthy(having.evaluate(values, null));
    }

    /** {@link #passes} for selected values that start at {@code offset} of {@code row}. */
    private boolean passesAt(Object[] row, int offset) {
        Object[] values = new Object[kinds.length];
        System.arraycopy(row, offset, values, 0, values.length);
        return passes(values);
    }

    /** The passing row enters the window, to leave by {@code due} (its {@code M}, or its
     *  timestamp attribute; without a window it never leaves); its group. */
    private WindowGroup enter(WindowState window, Row row, long due, int argumentsAt,
                              Object[] plain) {
        Object key = WindowState.groupKey(groups, i -> row.get(FIRST + i));
        WindowGroup group = window.groups.computeIfAbsent(key,
                k -> new WindowGroup(k, arguments, kinds, indexes));
        double[] values = new double[arguments];
        long[] longs = new long[arguments];
        readArguments(row, argumentsAt, values, longs);
        group.add(values, longs, plain);
        if (!unbounded) {
            window.queue.addLast(new WindowState.Entry(due, group, values, plain));
        }
        return group;
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

    private static void remove(WindowState window, WindowState.Entry entry) {
        WindowGroup group = entry.group;
        group.remove(entry.values, entry.plain);
        if (group.fresh()) {
            window.groups.remove(group.key);
        }
    }


}
