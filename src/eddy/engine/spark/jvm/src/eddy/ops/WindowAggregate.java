package eddy.ops;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import com.fasterxml.jackson.databind.ObjectMapper;
import eddy.ops.Selector.Chunk;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.types.StructType;

/**
 * A Siddhi {@code #window.time(t)}, {@code #window.length(n)},
 * {@code #window.timeLength(t, n)}, {@code #window.externalTime(a, t)},
 * {@code #window.externalTimeBatch(a, t)}, {@code #window.sort(n, a, ...)},
 * {@code #window.lengthBatch(n)}, {@code #window.timeBatch(t)}, {@code #window.delay(t)} or
 * {@code #window.session(gap [, key] [, latency])} ({@link SessionWindow}) — or no window at
 * all (current events only) — with
 * {@code avg}/{@code sum}/{@code count()}/{@code max}/{@code min} and the aggregates of
 * {@link KeptAggregate} per group, optionally {@code having} and
 * {@code order by}/{@code offset}/{@code limit} ({@link Ordering}), current, expired or all
 * events out, optionally at an output rate ({@link RateLimit}), run inside the JVM (Spark's
 * {@code flatMapGroupsWithState}) instead of a Python worker: the rows never cross into
 * Python; the {@link Selector} picks the outputs.
 * ({@code externalTime}, {@code sort} and the batch windows are described at
 * {@link #externalStep}, {@link #sortStep}, {@link #batchStep}, {@link #timeBatchStep},
 * {@link #externalBatchStep} and {@link #delayStep}.)
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
 * window) its timestamp attribute, (an {@code externalTimeBatch} from a start attribute)
 * that attribute, (a keyed {@code session}) its key as text, then (in a partition) the
 * partition value. Output:
 * {@code _seq}, {@code _ts}, (when expired events are outputs, the window is a batch or a
 * rate limit holds events: {@code _i} the position in its emission, {@code _x} expired,
 * {@code _timer} emitted by a timer, for a {@code timeBatch} {@code _n}: which of the timers
 * due at the row (a {@code session}'s too), and for a timed rate limit {@code _r}: the
 * limit's own timer,)
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
 * in a value partition, each value's window: Siddhi gives each partition key its own),
 * each with its rate limit's held events and counts.
 */
public final class WindowAggregate implements
        FlatMapGroupsWithStateFunction<Integer, Row, byte[], Row>, Serializable {
    private static final long serialVersionUID = 1L;

    private final WindowKind kind;
    /** The window's span: its time ({@code time}, {@code timeLength}, {@code externalTime},
     *  the batches' {@code t}) or its length ({@code length}, {@code lengthBatch},
     *  {@code sort}). */
    private final long span;
    /** A {@code timeLength}'s most events (none beside). */
    private final long size;
    /** {@code externalTimeBatch}: where its batches lie. */
    private final BatchGrid grid;
    /** {@code sort}: the attributes it sorts by. */
    private final SortKeys sortKeys;
    /** {@code session}: its gap and latency, or null. */
    private final SessionWindow session;
    /** {@code session}: the rows carry a session key (else every event has the default). */
    private final boolean sessionKeyed;
    /** Each value of a partition (a row's last column; null: a row that only moves the
     *  clock) has a window of its own, all of them on the clock of the rows they see. */
    private final boolean partitioned;
    private final Selector selector;
    private final WindowState.Codec codec;
    /** Whether the window's events keep their selected plain values: to go out as expired
     *  events, to leave a {@code distinctCount} or to be sorted. */
    private final boolean keepsPlain;
    private final RowLayout layout;

    private WindowAggregate(WindowKind kind, long span, long size, int groups,
                            String argumentTypes, Selector selector, SortKeys sortKeys,
                            BatchGrid grid, boolean partitioned, boolean sessionKeyed) {
        this.grid = grid;
        this.session = kind == WindowKind.SESSION ? new SessionWindow(span, size) : null;
        this.sessionKeyed = sessionKeyed;
        this.kind = kind;
        this.partitioned = partitioned;
        this.selector = selector;
        this.size = size;
        this.sortKeys = sortKeys;
        this.layout = new RowLayout(groups, argumentTypes,
                Math.max(selector.plainsRead(), sortKeys.plainsRead()));
        this.span = span;
        // a long sum is in the state only when selected, so that the state of a query
        // without one reads as it did before long sums
        boolean[] longSummed = new boolean[layout.arguments];
        for (int i = 0; i < selector.kinds.length; i++) {
            if (selector.kinds[i] == 'l') {
                longSummed[selector.indexes[i]] = true;
            }
        }
        this.keepsPlain = selector.expired || selector.selects('u') || kind == WindowKind.SORT;
        this.codec = new WindowState.Codec(groups, layout.arguments, layout.plains, keepsPlain,
                kind.holds(), session != null, longSummed, selector.kinds, selector.indexes,
                selector.limit);
    }

    /**
     * The outputs of {@code rows} (laid out as the class says) in {@code output}'s schema;
     * {@code argumentTypes} one letter per argument ({@code d} a double, {@code l} an int or
     * long), {@code kinds} as a comma-separated list, {@code events} {@code current},
     * {@code expired} or {@code all}, {@code having} the condition's JSON or empty;
     * {@code size} a {@code timeLength}'s events or a {@code session}'s latency;
     * {@code ordering} the {@link Ordering}'s
     * JSON or empty; {@code partitioned}: the rows end with a partition value (each value
     * its own window); {@code rate} the {@link RateLimit} or empty; {@code batchStart} an
     * {@code externalTimeBatch}'s {@link BatchGrid} start; {@code sessionKeyed}: the rows
     * carry a {@code session} window's key as text after the plain columns.
     */
    public static Dataset<Row> apply(Dataset<Row> rows, String window, String events,
                                     long span, long size, int groups, String argumentTypes,
                                     String kinds, String having, String ordering,
                                     String sortKeys, String batchStart, boolean partitioned,
                                     String rate, boolean sessionKeyed, StructType output)
            throws IOException {
        ObjectMapper json = new ObjectMapper();
        WindowKind kind = WindowKind.named(window);
        // which of a row's due timers emitted an event: a timeBatch's, an emitting session's
        boolean firing = kind == WindowKind.TIME_BATCH
                || kind == WindowKind.SESSION && !"current".equals(events);
        Selector selector = new Selector(items(kinds), events, kind.holds(), firing, groups,
                having.isEmpty() ? null : Expression.parse(json.readTree(having)),
                ordering.isEmpty() ? null : Ordering.parse(json.readTree(ordering)), rate,
                output);
        WindowAggregate step = new WindowAggregate(kind, span, size, groups, argumentTypes,
                selector, new SortKeys(items(sortKeys)), new BatchGrid(batchStart, span),
                partitioned, sessionKeyed);
        return KeyColumn.stepped(rows, 4, step, output);
    }

    /** The items of a comma-separated list (none in an empty one). */
    private static String[] items(String list) {
        return list.isEmpty() ? new String[0] : list.split(",");
    }

    @Override
    public Iterator<Row> call(Integer key, Iterator<Row> input, GroupState<byte[]> state) {
        List<Row> rows = new ArrayList<>();
        input.forEachRemaining(rows::add);
        rows.sort((a, b) -> Long.compare(a.getLong(0), b.getLong(0)));
        WindowState.Keyed keyed = !partitioned ? null
                : state.exists() ? codec.readKeyed(state.get()) : new WindowState.Keyed();
        WindowState window = partitioned ? null
                : state.exists() ? codec.read(state.get()) : codec.fresh();
        List<Row> out = new ArrayList<>();
        Chunk chunk = selector.new Chunk();
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
                window = keyed.windows.computeIfAbsent(value, k -> codec.fresh());
                window.clock = clock;
            }
            chunk.startRow(row.getLong(0), ts, window.limited);
            step(window, chunk, row, ts, out);
            chunk.endRow(out);
        }
        state.update(partitioned ? codec.writeKeyed(keyed) : codec.write(window));
        return out.iterator();
    }

    /** One row through the window, its outputs into {@code out}. */
    private void step(WindowState window, Chunk chunk, Row row, long ts,
                      List<Row> out) {
        if (kind == WindowKind.EXTERNAL_TIME) {
            externalStep(window, chunk, row, ts, out);
            return;
        }
        if (kind == WindowKind.EXTERNAL_TIME_BATCH) {
            externalBatchStep(window, chunk, row, ts, out);
            return;
        }
        boolean late = ts < window.clock;
        window.clock = Math.max(window.clock, ts);
        switch (kind) {
            case LENGTH_BATCH -> batchStep(window, chunk, row, ts, out);
            case TIME_BATCH -> timeBatchStep(window, chunk, row, ts, out);
            case DELAY -> delayStep(window, chunk, row, ts, late, out);
            case SORT -> sortStep(window, chunk, row, ts, out);
            case SESSION -> sessionStep(window, chunk, row, ts, late, out);
            default -> {
                if (selector.expired) {
                    expiringStep(window, chunk, row, ts, late, out);
                } else {
                    currentStep(window, chunk, row, ts, out);
                }
            }
        }
    }

    /** One row of a sliding window (or none) when only current events go out. */
    private void currentStep(WindowState window, Chunk chunk, Row row, long ts,
                             List<Row> out) {
        if (kind != WindowKind.LENGTH) {
            long threshold = window.clock - span;
            while (!window.queue.isEmpty() && window.queue.peekFirst().ts <= threshold) {
                remove(window, window.queue.pollFirst());
            }
        }
        if (!row.getBoolean(3)) {
            return;
        }
        if (window.queue.size() >= capacity()) {
            remove(window, window.queue.pollFirst());  // the new event pushes out the head
        }
        window.last = Math.max(window.last, ts);
        WindowGroup group = enter(window, row, kind == WindowKind.TIME_LENGTH ? ts
                : window.last, keepsPlain ? layout.plainValues(row) : null);
        emitOwn(chunk, row, group, ts, out);
    }

    /** A passing row's own output, current events only: at once, or (a rate limit holds
     *  events) as a chunk of its own. */
    private void emitOwn(Chunk chunk, Row row, WindowGroup group, long ts, List<Row> out) {
        if (selector.limit == null) {
            selector.emitCurrent(row, group, ts, out, layout.plainAt());
        } else {
            chunk.select(group, layout.plainValues(row), ts, false);
            chunk.emitTo(out, false, 0);
        }
    }

    /** The most events a sliding window holds before a new one pushes out its head. */
    private long capacity() {
        return switch (kind) {
            case TIME_LENGTH -> size;
            case LENGTH -> span;
            default -> Long.MAX_VALUE;
        };
    }

    /**
     * One row of an {@code externalTime(attribute, t)} window, as the runtime runs it: only
     * a passing row reaches the window; its timestamp attribute is the clock (it may go
     * back), the heads with an attribute at most {@code clock - t} leave (the head first),
     * as expired events stamped with the clock, then the row enters; no timers.
     */
    private void externalStep(WindowState window, Chunk chunk, Row row, long ts, List<Row> out) {
        if (!row.getBoolean(3)) {
            return;
        }
        long now = layout.externalClock(row);
        window.clock = now;
        while (!window.queue.isEmpty() && window.queue.peekFirst().ts - now + span <= 0) {
            if (selector.expired) {
                leave(window, chunk);
            } else {
                remove(window, window.queue.pollFirst());
            }
        }
        Object[] plain = keepsPlain ? layout.plainValues(row) : null;
        WindowGroup group = enter(window, row, now, plain);
        if (selector.expired) {
            chunk.select(group, plain, ts, false);
            chunk.emitTo(out, false, 0);
        } else {
            emitOwn(chunk, row, group, ts, out);
        }
    }

    /**
     * One row of an {@code externalTimeBatch(attribute, t [, start])} window, as the runtime
     * runs it: only a passing row reaches it; the first sets the first batch's end and the
     * batches' grid ({@link BatchGrid}); the clock is the largest attribute
     * seen (from 0); an event before the end waits in the batch, one at or past it first
     * flushes the batch ({@link #flush}: expired events stamped with the clock) for its own
     * row, moves the end to the grid's next after the clock, then waits. The timers hold the
     * end and the grid's start; {@code last} the clock. No timer fires: without a timeout
     * only events close a batch.
     */
    private void externalBatchStep(WindowState window, Chunk chunk, Row row, long ts,
                                   List<Row> out) {
        if (!row.getBoolean(3)) {
            return;
        }
        long time = layout.externalClock(row);
        if (window.timers.isEmpty()) {
            long[] first = grid.first(time, grid.readsAttribute()
                    ? layout.startAttribute(row) : null);
            window.timers.addLast(first[0]);
            window.timers.addLast(first[1]);
            window.last = 0;
        }
        long end = window.timers.peekFirst();
        long start = window.timers.peekLast();
        window.last = Math.max(window.last, time);
        if (time >= end) {
            window.clock = window.last;
            flush(window, chunk);
            chunk.emitTo(out, false, 0);
            window.timers.clear();
            window.timers.addLast(grid.next(window.last, start));
            window.timers.addLast(start);
        }
        hold(window, row, ts);
    }

    /**
     * One row of a {@code lengthBatch(n)} window, as the runtime runs it: a passing event
     * waits; the n-th flushes the batch ({@link #flush}), emitted for the row that filled it.
     */
    private void batchStep(WindowState window, Chunk chunk, Row row, long ts, List<Row> out) {
        if (!row.getBoolean(3)) {
            return;
        }
        hold(window, row, ts);
        if (window.pending.size() >= span) {
            flush(window, chunk);
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
    private void timeBatchStep(WindowState window, Chunk chunk, Row row, long ts, List<Row> out) {
        Long end = window.timers.peekFirst();
        if (end != null && window.clock >= end) {
            long next = end + span;
            flush(window, chunk);
            chunk.emitTo(out, true, 0);
            if (window.clock >= next) {  // the next end fires too: the batch just out expires
                flush(window, chunk);
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
        hold(window, row, ts);
    }

    /**
     * One row of a {@code delay(t)} window, as the runtime runs it: a row that is not late
     * fires the due timers (the first releases, as the timer's emission, every waiting event
     * due by the clock: its timestamp at most {@code clock - t}, in arrival order, each a
     * current event stamped with the clock that enters its group for good); a passing row
     * then releases what is still due (as its own emission) and waits, asking for a timer at
     * its timestamp plus {@code t} when that is later than every earlier one's.
     */
    private void delayStep(WindowState window, Chunk chunk, Row row, long ts, boolean late,
                           List<Row> out) {
        if (!late && !window.timers.isEmpty() && window.timers.peekFirst() <= window.clock) {
            while (!window.timers.isEmpty() && window.timers.peekFirst() <= window.clock) {
                window.timers.pollFirst();
            }
            release(window, chunk);
            chunk.emitTo(out, true, 0);
        }
        if (!row.getBoolean(3)) {
            return;
        }
        release(window, chunk);
        chunk.emitTo(out, false, 0);
        hold(window, row, ts);
        if (ts > window.last) {
            window.timers.addLast(ts + span);
            window.last = ts;
        }
    }

    /**
     * One row of a {@code session} window ({@link SessionWindow}): a row that is not late
     * fires the due timers in the order they were asked for (a timer due later than one
     * behind it holds that one back, as the runtime's FIFO does), each its own emission of
     * the events of the sessions it closes, stamped with their own timestamps; a passing
     * row then arrives: unless dropped as too late, it enters its group and goes out, with
     * what it pushed out of a previous session (a latency) as expired events in its chunk.
     */
    private void sessionStep(WindowState window, Chunk chunk, Row row, long ts, boolean late,
                             List<Row> out) {
        List<WindowState.Entry> expired = new ArrayList<>();
        int fired = 0;
        while (!late && !window.timers.isEmpty() && window.timers.peekFirst() <= window.clock) {
            session.timeout(window.sessions, window.timers.pollFirst(), window.timers, expired);
            leaveAll(window, chunk, expired);
            chunk.emitTo(out, true, fired++);
        }
        if (!row.getBoolean(3)) {
            return;
        }
        Object[] plain = keepsPlain ? layout.plainValues(row) : null;
        WindowGroup group = groupOf(window, layout.groupKey(row));
        double[] values = new double[layout.arguments];
        long[] longs = new long[layout.arguments];
        layout.readArguments(row, values, longs);
        String key = sessionKeyed ? layout.sessionKey(row) : SessionWindow.DEFAULT_KEY;
        if (!session.arrive(window.sessions, key, new WindowState.Entry(ts, group, values,
                plain), window.timers, expired)) {
            if (group.fresh()) {
                window.groups.remove(group.key);
            }
            return;
        }
        group.add(values, longs, plain);
        if (selector.expired) {
            chunk.select(group, plain, ts, false);
        } else {
            emitOwn(chunk, row, group, ts, out);
        }
        leaveAll(window, chunk, expired);
        if (selector.expired) {
            chunk.emitTo(out, false, 0);
        }
    }

    /** {@code expired} leave the window (and are forgotten), each with its own timestamp,
     *  into {@code chunk}. */
    private void leaveAll(WindowState window, Chunk chunk, List<WindowState.Entry> expired) {
        for (WindowState.Entry entry : expired) {
            remove(window, entry);
            chunk.select(entry.group, entry.plain, entry.ts, true);
        }
        expired.clear();
    }

    /** A delay window's waiting events due by the clock go out, into {@code chunk}. */
    private void release(WindowState window, Chunk chunk) {
        int due = 0;
        for (WindowState.Pending event : window.pending) {
            if (event.ts - window.clock + span > 0) {
                break;
            }
            WindowGroup group = groupOf(window, event.key);
            group.add(event.values, event.longs, event.plain);
            chunk.select(group, event.plain, window.clock, false);
            due++;
        }
        window.pending.subList(0, due).clear();
    }

    /**
     * One row of a {@code sort(n, ...)} window, as the runtime runs it: a passing event
     * enters (and, its chunk's first event, takes its group's aggregates as they are then);
     * when the window holds more than {@code n}, its events are sorted (stably, by the sort
     * attributes; the order stays for the next sort) and the last leaves, an expired event
     * stamped with the clock, after the current one in the same chunk.
     */
    private void sortStep(WindowState window, Chunk chunk, Row row, long ts, List<Row> out) {
        if (!row.getBoolean(3)) {
            return;
        }
        Object[] plain = layout.plainValues(row);
        WindowGroup group = enter(window, row, ts, plain);
        if (selector.expired) {
            chunk.select(group, plain, ts, false);
        } else {
            emitOwn(chunk, row, group, ts, out);
        }
        if (window.queue.size() > span) {
            List<WindowState.Entry> kept = new ArrayList<>(window.queue);
            kept.sort(sortKeys);
            window.queue.clear();
            window.queue.addAll(kept);
            WindowState.Entry last = window.queue.pollLast();
            remove(window, last);
            chunk.select(last.group, last.plain, window.clock, true);
        }
        if (selector.expired) {
            chunk.emitTo(out, false, 0);
        }
    }

    /** A passing row of a batch window waits for its batch, not aggregated yet. */
    private void hold(WindowState window, Row row, long ts) {
        double[] values = new double[layout.arguments];
        long[] longs = new long[layout.arguments];
        layout.readArguments(row, values, longs);
        Object key = layout.groupKey(row);
        window.pending.add(new WindowState.Pending(ts, key, values, longs,
                layout.plainValues(row)));
    }

    /**
     * A batch window's flush into {@code chunk}, as one chunk of the runtime: the previous
     * batch's events as expired events stamped with the clock (when expired events are
     * outputs; each leaves its group's aggregates), then — when the batch has events — a
     * reset that forgets every group and the batch's events, each entering its group.
     */
    private void flush(WindowState window, Chunk chunk) {
        while (selector.expired && !window.queue.isEmpty()) {
            leave(window, chunk);
        }
        if (window.pending.isEmpty()) {
            return;
        }
        window.groups.clear();
        for (WindowState.Pending event : window.pending) {
            WindowGroup group = groupOf(window, event.key);
            group.add(event.values, event.longs, event.plain);
            if (selector.expired) {
                window.queue.addLast(new WindowState.Entry(0, group, event.values,
                        event.plain));
            }
            chunk.select(group, event.plain, event.ts, false);
        }
        window.pending.clear();
    }

    /** One row when expired events are outputs: the timer's emission, then the row's. */
    private void expiringStep(WindowState window, Chunk chunk, Row row, long ts, boolean late,
                              List<Row> out) {
        boolean length = kind == WindowKind.LENGTH;
        boolean timeLength = kind == WindowKind.TIME_LENGTH;
        if (!length && !late) {
            boolean fired = false;
            while (!window.timers.isEmpty() && window.timers.peekFirst() <= window.clock) {
                window.timers.pollFirst();
                fired = true;
            }
            if (fired) {
                expire(window, chunk);
                chunk.emitTo(out, true, 0);
            }
        }
        if (!row.getBoolean(3)) {
            return;
        }
        if (!length) {
            expire(window, chunk);
        }
        if (window.queue.size() >= capacity()) {
            leave(window, chunk);
        }
        Object[] plain = layout.plainValues(row);
        if (timeLength || !length && ts > window.last) {
            window.timers.addLast(ts + span);  // (a timeLength: every event, in its order)
        }
        window.last = Math.max(window.last, ts);
        WindowGroup group = enter(window, row, timeLength ? ts : window.last, plain);
        chunk.select(group, plain, ts, false);
        chunk.emitTo(out, false, 0);
    }

    /** Every head due by the clock leaves, into {@code chunk}. */
    private void expire(WindowState window, Chunk chunk) {
        long threshold = window.clock - span;
        while (!window.queue.isEmpty() && window.queue.peekFirst().ts <= threshold) {
            leave(window, chunk);
        }
    }

    private void leave(WindowState window, Chunk chunk) {
        WindowState.Entry entry = window.queue.pollFirst();
        remove(window, entry);
        chunk.select(entry.group, entry.plain, window.clock, true);
    }

    /** The passing row enters the window, to leave by {@code due} (its {@code M}, or its
     *  timestamp attribute; without a window it never leaves); its group. */
    private WindowGroup enter(WindowState window, Row row, long due, Object[] plain) {
        Object key = layout.groupKey(row);
        WindowGroup group = groupOf(window, key);
        double[] values = new double[layout.arguments];
        long[] longs = new long[layout.arguments];
        layout.readArguments(row, values, longs);
        group.add(values, longs, plain);
        if (kind != WindowKind.NONE) {
            window.queue.addLast(new WindowState.Entry(due, group, values, plain));
        }
        return group;
    }

    /** The window's group of {@code key}, made when it has none. */
    private WindowGroup groupOf(WindowState window, Object key) {
        return window.groups.computeIfAbsent(key,
                k -> new WindowGroup(k, layout.arguments, selector.kinds, selector.indexes));
    }

    private static void remove(WindowState window, WindowState.Entry entry) {
        WindowGroup group = entry.group;
        group.remove(entry.values, entry.plain);
        if (group.fresh()) {
            window.groups.remove(group.key);
        }
    }


}
