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
import java.util.Comparator;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import eddy.ops.FollowedBy.Instance;
import eddy.ops.FollowedBy.Match;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.types.StructType;

/**
 * {@code [every] e1=S1[f] -> not S2[c] for t} inside the JVM (Spark's
 * {@code flatMapGroupsWithState}), optionally per value of a partition: each {@code e1}
 * waits {@code t} for an {@code S2} event that {@code c} accepts, and goes out when none
 * came.
 *
 * <p>It follows the per-event runtime (the reference's {@code AbsentStreamPreStateProcessor},
 * ported in {@code eddy.runtime.pattern.absent}) step by step, timers included, because the
 * firing times decide what goes out when: the absent state's scheduler is a FIFO of times;
 * every row of the group that is not late ({@code ts >=} the clock) moves the clock and
 * first fires, in order, each timer at its head that is due. An {@code e1} (an {@code S1}
 * row passing {@code f}; without {@code every} only the first) joins the new list and asks
 * for a timer at {@code ts + t} (the state's last time). An {@code S2} row first moves the new
 * list, sorted by timestamp (stably), to the pending list; one passing {@code c}'s conjuncts
 * on its own event then kills every pending match of its equality key whose residual
 * condition holds, each kill asking for a timer at its {@code ts + t}. A timer at {@code T}
 * moves the new list too, then sends out every pending match with {@code ts + t <= T} in
 * list order, each its own emission, stamped {@code T}; when it sent none and the last time
 * is before {@code T}, it asks for another at {@code T + t} (and when the clock is past
 * {@code T + t}, the last time moves to the clock plus {@code t}). In a value partition
 * each value has its own instance and timers, on the partition's keyed scheduler
 * ({@link KeyedTimers}); a row without a value only moves the clock.
 *
 * <p>While the pending list stays in timestamp order (events in order) the due matches are
 * its head, so a timer reads only those; otherwise it scans the list, as the runtime does.
 * Kills go through the pending list indexed by the equality keys ({@link FollowedBy}'s).
 *
 * <p>Input row layout (positions): {@code _seq} long, {@code _ts} long, starts a match
 * (bool), is an {@code S2} event (bool), passes the conditions on its own event (bool), the
 * state key (int, one key: the scheduler is the query's), the partition value (text, or
 * null), then the operator's columns. Spec (JSON): {@code waiting} (ms), {@code every},
 * {@code partitioned}, {@code firsts}, {@code keys},
 * {@code residual} as {@link FollowedBy}'s, {@code selected} ({@code [side, index]}: 0 a
 * kept {@code e1} value, 2 the emission's timestamp). Output: {@code _seq}, {@code _ts},
 * {@code _n} which of the row's due timers (in a partition: keys) sent it, {@code _k} which
 * of its key's timers, {@code _i} its emission among the timer's, then the selected values.
 *
 * <p>State, one binary value: the clock, the keyed scheduler's insertion counter and
 * capacity, then per instance its partition value, its place in the scheduler's key map,
 * the last time, whether the first {@code e1} came, the timers, the pending matches then the
 * new ones. An instance with nothing waiting is not kept.
 */
public final class AbsentPattern implements
        FlatMapGroupsWithStateFunction<Integer, Row, byte[], Row>, Serializable {
    private static final long serialVersionUID = 1L;

    private static final int PARTITION = 6;
    /** The instance of an unpartitioned pattern. */
    private static final String NO_PARTITION = "";

    private final long waiting;
    private final boolean every;
    /** Each value of a partition (a row's {@code _partition}, as text) has its own
     *  instance, on the partition's keyed scheduler. */
    private final boolean partitioned;
    private final int[] firsts;
    private final int[] keyFirst;
    private final int[] keyRow;
    private final Expression residual;
    private final int[] selectedSide;
    private final int[] selectedIndex;

    private AbsentPattern(JsonNode spec) {
        this.waiting = spec.get("waiting").asLong();
        this.every = spec.get("every").asBoolean();
        this.partitioned = spec.get("partitioned").asBoolean();
        this.firsts = FollowedBy.ints(spec.get("firsts"), -1);
        this.keyFirst = FollowedBy.ints(spec.get("keys"), 0);
        this.keyRow = FollowedBy.ints(spec.get("keys"), 1);
        this.residual = Expression.parse(spec.get("residual"));
        this.selectedSide = FollowedBy.ints(spec.get("selected"), 0);
        this.selectedIndex = FollowedBy.ints(spec.get("selected"), 1);
    }

    /** The pattern's outputs of {@code rows} (laid out as the class says) in
     *  {@code output}'s schema. */
    public static Dataset<Row> apply(Dataset<Row> rows, String spec, StructType output)
            throws IOException {
        AbsentPattern step = new AbsentPattern(new ObjectMapper().readTree(spec));
        return KeyColumn.stepped(rows, 5, step, output);
    }

    /** One pattern instance's absent state between rows (the app's, or a partition
     *  value's): its timers (its scheduler's FIFO, or its key's queue in a partition's). */
    static final class Waiting {
        long lastTime;
        boolean seeded;
        final ArrayDeque<Long> timers = new ArrayDeque<>();
        final Instance matches = new Instance();
        /** Whether the live pending matches are in timestamp order (none at -1), and the
         *  timestamp of the last one appended. */
        boolean ordered = true;
        long lastAppended = Long.MIN_VALUE;
        /** A partition's: when its key entered the scheduler's key map (-1: not in it). */
        int inserted = -1;

        boolean idle() {
            return timers.isEmpty() && matches.fresh.isEmpty()
                    && matches.pending.size() == matches.done;
        }
    }

    /** The pattern's instances and their scheduler (a partition's: see {@link KeyedTimers}). */
    static final class State {
        long clock;
        final Map<String, Waiting> instances = new LinkedHashMap<>();
        final KeyedTimers keyed = new KeyedTimers();
    }

    /**
     * A value partition's scheduler, as the runtime's {@code partition_timers} reproduces
     * the reference's: a FIFO per key, the keys in the order of a {@code HashMap} (bucket of
     * the key's hash at the map's capacity, then insertion; a key whose queue empties after
     * firing leaves the map and comes back at its end). When the clock moves, for each due
     * head time only the first key in that order with that head fires (in time order), all
     * its due timers one after another; a key dropped so fires at the next move. The heads
     * are indexed by time, so a move reads only the due ones.
     */
    static final class KeyedTimers {
        int counter;
        int capacity = 16;
        int size;
        final TreeMap<Long, Set<String>> heads = new TreeMap<>();

        /** {@code key}'s instance asks for a timer at {@code time}. */
        void add(String key, Waiting instance, long time) {
            if (instance.inserted < 0) {
                instance.inserted = counter++;
                size++;
                capacity = Sessions.KeyOrder.capacity(size, capacity);
            }
            if (instance.timers.isEmpty()) {
                heads.computeIfAbsent(time, t -> new HashSet<>()).add(key);
            }
            instance.timers.addLast(time);
        }

        /** The keys that fire when the clock reaches {@code now}, in firing order. */
        List<String> plan(long now, Map<String, Waiting> instances) {
            List<String> firing = new ArrayList<>();
            int mask = capacity - 1;
            for (Set<String> keys : heads.headMap(now, true).values()) {
                firing.add(Collections.min(keys, Comparator
                        .comparingInt((String k) -> Sessions.KeyOrder.spread(k.hashCode()) & mask)
                        .thenComparingInt(k -> instances.get(k).inserted)));
            }
            return firing;
        }

        /** {@code key}'s head timer is taken off its queue. */
        long poll(String key, Waiting instance) {
            long head = instance.timers.pollFirst();
            unindex(key, head);
            if (!instance.timers.isEmpty()) {
                heads.computeIfAbsent(instance.timers.peekFirst(), t -> new HashSet<>()).add(key);
            }
            return head;
        }

        private void unindex(String key, long head) {
            Set<String> keys = heads.get(head);
            keys.remove(key);
            if (keys.isEmpty()) {
                heads.remove(head);
            }
        }

        /** After firing: a key with nothing left to notify leaves the map. */
        void dropIfEmpty(Waiting instance) {
            if (instance.timers.isEmpty() && instance.inserted >= 0) {
                instance.inserted = -1;
                size--;
            }
        }
    }

    @Override
    public Iterator<Row> call(Integer key, Iterator<Row> input, GroupState<byte[]> state) {
        List<Row> rows = new ArrayList<>();
        input.forEachRemaining(rows::add);
        rows.sort(Comparator.comparingLong(row -> row.getLong(0)));
        State pattern = state.exists() ? restore(state.get()) : new State();
        List<Row> out = new ArrayList<>();
        for (Row row : rows) {
            step(pattern, row, out);
        }
        state.update(snapshot(pattern));
        return out.iterator();
    }

    private void step(State pattern, Row row, List<Row> out) {
        long seq = row.getLong(0);
        long ts = row.getLong(1);
        if (ts >= pattern.clock) {
            pattern.clock = ts;
            if (partitioned) {
                fireKeyed(pattern, seq, out);
            } else {
                Waiting only = pattern.instances.get(NO_PARTITION);
                int fired = 0;
                while (only != null && !only.timers.isEmpty() && only.timers.peekFirst() <= ts) {
                    onTimer(pattern, NO_PARTITION, only, only.timers.pollFirst(), seq, fired++,
                            0, out);
                }
            }
        }
        String partition = partitioned ? row.getString(PARTITION) : NO_PARTITION;
        if (partition == null) {
            return;  // a row of another stream, or without a key: it moves the clock alone
        }
        Waiting state = pattern.instances.computeIfAbsent(partition, k -> new Waiting());
        if (row.getBoolean(3)) {
            update(state);
            if (row.getBoolean(4)) {
                kill(pattern, partition, state, row, ts);
            }
        }
        if (row.getBoolean(2) && (every || !state.seeded)) {
            state.seeded = true;
            Object[] values = new Object[firsts.length];
            for (int i = 0; i < firsts.length; i++) {
                values[i] = row.get(firsts[i]);
            }
            Object key = FollowedBy.key(keyFirst, i -> values[i]);
            state.matches.fresh.add(new Match(seq, ts, values, key));
            state.lastTime = ts + waiting;
            notifyAt(pattern, partition, state, state.lastTime);
        }
        forgetIdle(pattern, partition, state);
    }

    /** The keyed timers due at the clock fire: each planned key's due ones in turn. */
    private void fireKeyed(State pattern, long seq, List<Row> out) {
        int fired = 0;
        for (String key : pattern.keyed.plan(pattern.clock, pattern.instances)) {
            Waiting state = pattern.instances.get(key);
            int n = 0;
            while (!state.timers.isEmpty() && state.timers.peekFirst() <= pattern.clock) {
                onTimer(pattern, key, state, pattern.keyed.poll(key, state), seq, fired, n++,
                        out);
            }
            pattern.keyed.dropIfEmpty(state);
            forgetIdle(pattern, key, state);
            fired++;
        }
    }

    private void notifyAt(State pattern, String key, Waiting state, long time) {
        if (partitioned) {
            pattern.keyed.add(key, state, time);
        } else {
            state.timers.addLast(time);
        }
    }

    /** An instance with nothing waiting is forgotten (under {@code every} nothing of it is
     *  read again before an event sets it anew). */
    private void forgetIdle(State pattern, String key, Waiting state) {
        if (every && state.idle() && state.inserted < 0) {
            pattern.instances.remove(key);
        }
    }

    /** The new list, sorted by timestamp (stably, -1 last), joins the pending list. */
    private static void update(Waiting state) {
        Instance matches = state.matches;
        if (matches.fresh.isEmpty()) {
            return;
        }
        if (matches.pending.size() == matches.done) {
            state.ordered = true;
            state.lastAppended = Long.MIN_VALUE;
        }
        matches.fresh.sort(Comparator.comparing((Match m) -> m.ts == -1)
                .thenComparingLong(m -> m.ts));
        for (Match match : matches.fresh) {
            appendPending(state, match);
        }
        matches.fresh.clear();
    }

    /** A match joins the pending list, which stays ordered while it comes in time order. */
    private static void appendPending(Waiting state, Match match) {
        state.ordered &= match.ts != -1 && match.ts >= state.lastAppended;
        state.lastAppended = match.ts;
        state.matches.append(match);
    }

    /** An {@code S2} row passing its own conditions kills the matches {@code c} accepts. */
    private void kill(State pattern, String partition, Waiting state, Row row, long ts) {
        for (Match ignored : state.matches.take(FollowedBy.key(keyRow, row::get), residual,
                                                row)) {
            state.lastTime = ts + waiting;  // each kill asks for a timer
            notifyAt(pattern, partition, state, state.lastTime);
        }
    }

    /** The timer at {@code time} of the instance of {@code partition}: the {@code fired}-th
     *  due at row {@code seq} (in a partition: the {@code n}-th of its key's firing). */
    private void onTimer(State pattern, String partition, Waiting state, long time, long seq,
                         int fired, int n, List<Row> out) {
        update(state);
        Instance matches = state.matches;
        List<Match> passed = new ArrayList<>();
        for (Match match : matches.pending) {
            if (match.done) {
                continue;
            }
            if (match.ts == -1 ? time >= state.lastTime : time >= match.ts + waiting) {
                passed.add(match);
            } else if (state.ordered) {
                break;  // the rest are later still
            }
        }
        for (Match match : passed) {
            match.done = true;
            matches.done += 1;
            if (match.key != null) {
                ArrayDeque<Match> same = matches.byKey.get(match.key);
                if (same.peekFirst() == match) {
                    same.pollFirst();
                } else {
                    same.remove(match);
                }
                if (same.isEmpty()) {
                    matches.byKey.remove(match.key);
                }
            }
        }
        while (!matches.pending.isEmpty() && matches.pending.peekFirst().done) {
            matches.pending.pollFirst();
            matches.done -= 1;
        }
        matches.compact();
        int emission = 0;
        for (Match match : passed) {
            Object[] emitted = new Object[5 + selectedSide.length];
            emitted[0] = seq;
            emitted[1] = time;
            emitted[2] = fired;
            emitted[3] = n;
            emitted[4] = emission++;
            for (int i = 0; i < selectedSide.length; i++) {
                Object value = selectedSide[i] == 2 ? (Object) time
                        : match.values[selectedIndex[i]];
                emitted[5 + i] = value instanceof Double && ((Double) value).isNaN()
                        ? null : value;
            }
            out.add(RowFactory.create(emitted));
        }
        if (pattern.clock > waiting + time) {
            state.lastTime = pattern.clock + waiting;
        }
        if (passed.isEmpty() && state.lastTime < time) {
            state.lastTime = time + waiting;
            notifyAt(pattern, partition, state, state.lastTime);
        }
    }

    // -- state ---------------------------------------------------------------------------

    private byte[] snapshot(State pattern) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeLong(pattern.clock);
            out.writeInt(pattern.keyed.counter);
            out.writeInt(pattern.keyed.capacity);
            out.writeInt(pattern.instances.size());
            for (Map.Entry<String, Waiting> entry : pattern.instances.entrySet()) {
                out.writeUTF(entry.getKey());
                Waiting state = entry.getValue();
                out.writeInt(state.inserted);
                out.writeLong(state.lastTime);
                out.writeBoolean(state.seeded);
                out.writeInt(state.timers.size());
                for (long due : state.timers) {
                    out.writeLong(due);
                }
                FollowedBy.writeMatches(out, state.matches);
            }
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        return bytes.toByteArray();
    }

    private State restore(byte[] bytes) {
        State pattern = new State();
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            pattern.clock = in.readLong();
            pattern.keyed.counter = in.readInt();
            pattern.keyed.capacity = in.readInt();
            for (int i = in.readInt(); i > 0; i--) {
                String key = in.readUTF();
                Waiting state = new Waiting();
                pattern.instances.put(key, state);
                state.inserted = in.readInt();
                state.lastTime = in.readLong();
                state.seeded = in.readBoolean();
                for (int t = in.readInt(); t > 0; t--) {
                    state.timers.addLast(in.readLong());
                }
                if (state.inserted >= 0) {
                    pattern.keyed.size++;
                }
                if (!state.timers.isEmpty() && partitioned) {
                    pattern.keyed.heads.computeIfAbsent(state.timers.peekFirst(),
                            t -> new HashSet<>()).add(key);
                }
                for (int p = in.readInt(); p > 0; p--) {
                    appendPending(state, FollowedBy.readMatch(in, firsts.length, keyFirst));
                }
                for (int f = in.readInt(); f > 0; f--) {
                    state.matches.fresh.add(FollowedBy.readMatch(in, firsts.length, keyFirst));
                }
            }
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        return pattern;
    }
}
