package eddy.ops;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * The window of one state key of {@link WindowAggregate}: its clock, the largest passing
 * timestamp, the pending timers, its groups, its queue and a batch window's events waiting
 * for their batch; and (the {@link Codec}) its bytes in Spark's state store, one
 * binary value per key written whole each micro-batch, laid out by the query's shape.
 */
final class WindowState {
    long clock;
    long last = Long.MIN_VALUE;
    final ArrayDeque<Long> timers = new ArrayDeque<>();
    final Map<Object, WindowGroup> groups = new HashMap<>();
    final ArrayDeque<Entry> queue = new ArrayDeque<>();
    /** A batch window's events since its last flush, not aggregated yet. */
    final List<Pending> pending = new ArrayList<>();
    /** Its query's rate limit state, or null. */
    RateLimit.State limited;
    /** A {@code session} window's sessions, or null. */
    Sessions sessions;

    /** The windows of a value partition's values (Siddhi gives each value its own) that
     *  one state key holds, and the clock of the rows the key sees. */
    static final class Keyed {
        long clock;
        final Map<Object, WindowState> windows = new HashMap<>();
    }

    /** The key of the one group of a query without {@code group by}. */
    static final Object NO_GROUP = List.of();

    /** An event in the window: {@code ts} is its {@code M} (see {@link WindowAggregate}),
     *  which leaves exactly when its own timestamp would under the head-first rule (an
     *  {@code externalTime} window: its attribute). */
    static final class Entry {
        final long ts;
        final WindowGroup group;
        final double[] values;
        /** Its selected plain values, kept only when expired events are outputs or a
         *  {@code distinctCount} is selected. */
        final Object[] plain;

        Entry(long ts, WindowGroup group, double[] values, Object[] plain) {
            this.ts = ts;
            this.group = group;
            this.values = values;
            this.plain = plain;
        }
    }

    /** An event of a batch window waiting for its batch to end. */
    static final class Pending {
        final long ts;
        final Object key;
        final double[] values;
        final long[] longs;
        final Object[] plain;

        Pending(long ts, Object key, double[] values, long[] longs, Object[] plain) {
            this.ts = ts;
            this.key = key;
            this.values = values;
            this.longs = longs;
            this.plain = plain;
        }
    }

    /** A group's map key from its {@code group by} values ({@code part(i)}: the i-th). */
    static Object groupKey(int groups, IntFunction<Object> part) {
        if (groups == 0) {
            return NO_GROUP;
        }
        if (groups == 1) {
            return part.apply(0);
        }
        List<Object> key = new ArrayList<>(groups);
        for (int i = 0; i < groups; i++) {
            key.add(part.apply(i));
        }
        return key;
    }

    /** A group's key as its {@code group by} values (none without one). */
    static void writeKey(DataOutputStream out, int groups, Object key) throws IOException {
        for (Object part : keyParts(groups, key)) {
            StateValues.write(out, part);
        }
    }

    /** A group's key written by {@link #writeKey}. */
    static Object readKey(DataInputStream in, int groups) throws IOException {
        Object[] parts = new Object[groups];
        for (int i = 0; i < groups; i++) {
            parts[i] = StateValues.read(in);
        }
        return groupKey(groups, i -> parts[i]);
    }

    /** A group's {@code group by} values, from its map key. */
    @SuppressWarnings("unchecked")
    static List<Object> keyParts(int groups, Object key) {
        return groups == 1 ? Collections.singletonList(key) : (List<Object>) key;
    }

    /**
     * A window's bytes for one query: the clock, the largest passing timestamp, the timers,
     * each live group's key, sums (long sums only of the arguments a long sum is selected
     * of, so that other queries' state reads as it did before long sums), counts, kept
     * aggregates ({@link KeptAggregate#write}) and size, the queue (each event's selected
     * values when they are kept), for a batch window its waiting events, and the query's
     * rate limit state.
     */
    static final class Codec implements Serializable {
        private static final long serialVersionUID = 1L;

        private final int groups;
        private final int arguments;
        private final int plains;
        /** Whether the window's events keep their selected plain values. */
        private final boolean plainKept;
        private final boolean batch;
        /** A {@code session} window: its sessions follow the queue. */
        private final boolean session;
        private final boolean[] longSummed;
        private final char[] kinds;
        private final int[] indexes;
        /** The query's rate limit, or null. */
        private final RateLimit limit;

        Codec(int groups, int arguments, int plains, boolean plainKept, boolean batch,
              boolean session, boolean[] longSummed, char[] kinds, int[] indexes,
              RateLimit limit) {
            this.session = session;
            this.limit = limit;
            this.groups = groups;
            this.arguments = arguments;
            this.plains = plains;
            this.plainKept = plainKept;
            this.batch = batch;
            this.longSummed = longSummed;
            this.kinds = kinds;
            this.indexes = indexes;
        }

        /** A new window (with a new rate limit state when the query has a limit). */
        WindowState fresh() {
            WindowState window = new WindowState();
            window.limited = limit == null ? null : new RateLimit.State();
            window.sessions = session ? new Sessions() : null;
            return window;
        }

        /** The clock and the windows of a partition's values, each as {@link #write} lays
         *  it out. */
        byte[] writeKeyed(Keyed keyed) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (DataOutputStream out = new DataOutputStream(bytes)) {
                out.writeLong(keyed.clock);
                out.writeInt(keyed.windows.size());
                for (Map.Entry<Object, WindowState> entry : keyed.windows.entrySet()) {
                    StateValues.write(out, entry.getKey());
                    byte[] window = write(entry.getValue());
                    out.writeInt(window.length);
                    out.write(window);
                }
            } catch (IOException error) {
                throw new UncheckedIOException(error);
            }
            return bytes.toByteArray();
        }

        Keyed readKeyed(byte[] state) {
            Keyed keyed = new Keyed();
            try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(state))) {
                keyed.clock = in.readLong();
                for (int count = in.readInt(); count > 0; count--) {
                    Object key = StateValues.read(in);
                    byte[] window = new byte[in.readInt()];
                    in.readFully(window);
                    keyed.windows.put(key, read(window));
                }
            } catch (IOException error) {
                throw new UncheckedIOException(error);
            }
            return keyed;
        }

        byte[] write(WindowState window) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (DataOutputStream out = new DataOutputStream(bytes)) {
                out.writeLong(window.clock);
                out.writeLong(window.last);
                out.writeInt(window.timers.size());
                for (long due : window.timers) {
                    out.writeLong(due);
                }
                Map<WindowGroup, Integer> numbers = new HashMap<>();
                List<WindowGroup> live = new ArrayList<>(window.groups.values());
                out.writeInt(live.size());
                for (WindowGroup group : live) {
                    numbers.put(group, numbers.size());
                    writeKey(out, groups, group.key);
                    for (int i = 0; i < arguments; i++) {
                        out.writeDouble(group.sums[i]);
                        if (longSummed[i]) {
                            out.writeLong(group.longSums[i]);
                        }
                        out.writeLong(group.counts[i]);
                    }
                    for (KeptAggregate aggregate : group.kept) {
                        if (aggregate != null) {
                            aggregate.write(out);
                        }
                    }
                    out.writeLong(group.size);
                }
                out.writeInt(window.queue.size());
                for (Entry entry : window.queue) {
                    writeEntry(out, entry, numbers);
                }
                if (session) {
                    window.sessions.write(out, entry -> writeEntry(out, entry, numbers));
                }
                if (batch) {
                    writePending(out, window.pending);
                }
                if (limit != null) {
                    limit.write(out, window.limited);
                }
            } catch (IOException error) {
                throw new UncheckedIOException(error);
            }
            return bytes.toByteArray();
        }

        /** An event in the window: its {@code ts}, its group's number, its arguments and
         *  (when kept) its selected plain values. */
        private void writeEntry(DataOutputStream out, Entry entry,
                                Map<WindowGroup, Integer> numbers) throws IOException {
            out.writeLong(entry.ts);
            out.writeInt(numbers.get(entry.group));
            for (double value : entry.values) {
                out.writeDouble(value);
            }
            if (plainKept) {
                for (Object value : entry.plain) {
                    StateValues.write(out, value);
                }
            }
        }

        private Entry readEntry(DataInputStream in, List<WindowGroup> numbered) {
            try {
                long ts = in.readLong();
                WindowGroup group = numbered.get(in.readInt());
                double[] values = new double[arguments];
                for (int i = 0; i < arguments; i++) {
                    values[i] = in.readDouble();
                }
                Object[] plain = null;
                if (plainKept) {
                    plain = new Object[plains];
                    for (int i = 0; i < plains; i++) {
                        plain[i] = StateValues.read(in);
                    }
                }
                return new Entry(ts, group, values, plain);
            } catch (IOException error) {
                throw new UncheckedIOException(error);
            }
        }

        private void writePending(DataOutputStream out, List<Pending> pending) throws IOException {
            out.writeInt(pending.size());
            for (Pending event : pending) {
                out.writeLong(event.ts);
                writeKey(out, groups, event.key);
                for (int i = 0; i < arguments; i++) {
                    out.writeDouble(event.values[i]);
                    out.writeLong(event.longs[i]);
                }
                for (Object value : event.plain) {
                    StateValues.write(out, value);
                }
            }
        }

        private void readPending(DataInputStream in, List<Pending> pending) throws IOException {
            for (int count = in.readInt(); count > 0; count--) {
                long ts = in.readLong();
                Object key = readKey(in, groups);
                double[] values = new double[arguments];
                long[] longs = new long[arguments];
                for (int i = 0; i < arguments; i++) {
                    values[i] = in.readDouble();
                    longs[i] = in.readLong();
                }
                Object[] plain = new Object[plains];
                for (int i = 0; i < plains; i++) {
                    plain[i] = StateValues.read(in);
                }
                pending.add(new Pending(ts, key, values, longs, plain));
            }
        }

        WindowState read(byte[] state) {
            WindowState window = new WindowState();
            try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(state))) {
                window.clock = in.readLong();
                window.last = in.readLong();
                for (int t = in.readInt(); t > 0; t--) {
                    window.timers.addLast(in.readLong());
                }
                int count = in.readInt();
                List<WindowGroup> numbered = new ArrayList<>(count);
                for (int g = 0; g < count; g++) {
                    Object key = readKey(in, groups);
                    WindowGroup group = new WindowGroup(key, arguments, kinds, indexes);
                    for (int i = 0; i < arguments; i++) {
                        group.sums[i] = in.readDouble();
                        if (longSummed[i]) {
                            group.longSums[i] = in.readLong();
                        }
                        group.counts[i] = in.readLong();
                    }
                    for (KeptAggregate aggregate : group.kept) {
                        if (aggregate != null) {
                            aggregate.read(in);
                        }
                    }
                    group.size = in.readLong();
                    window.groups.put(key, group);
                    numbered.add(group);
                }
                int queued = in.readInt();
                for (int q = 0; q < queued; q++) {
                    window.queue.addLast(readEntry(in, numbered));
                }
                if (session) {
                    window.sessions = new Sessions();
                    window.sessions.read(in, entries -> readEntry(entries, numbered));
                }
                if (batch) {
                    readPending(in, window.pending);
                }
                if (limit != null) {
                    window.limited = limit.read(in);
                }
            } catch (IOException error) {
                throw new UncheckedIOException(error);
            }
            return window;
        }
    }
}
