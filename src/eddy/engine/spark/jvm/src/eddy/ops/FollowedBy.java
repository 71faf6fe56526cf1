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
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.types.StructType;

/**
 * {@code every e1=S1[f] -> e2=S2[c] within t} (optionally per partition value) inside the
 * JVM (Spark's {@code flatMapGroupsWithState}): the rows never cross into a Python worker.
 *
 * <p>It follows the reference's order of work event by event ({@code StreamPreStateProcessor},
 * ported in {@code eddy.runtime.pattern}; the NumPy operator
 * {@code eddy.engine.operators.followed_by.matching} computes the same): per pattern
 * instance (the app, or one partition value), before every event of either stream the
 * pending list loses its head while the head is out of {@code within} of the event's
 * timestamp ({@code |e1.ts - now| > t}), and the new list every match out of it; an
 * {@code S2} event then appends the new list, sorted by timestamp (stably), to the pending
 * list and completes, in list order, every pending match whose equality keys it shares and
 * whose residual condition holds — those leave; an {@code S1} event that passes {@code f}
 * starts a match, last in the new list.
 *
 * <p>The reference tests every pending match against every {@code S2} event; here the
 * pending list is also indexed by the equality keys ({@code e1.roomNo == roomNo}), so an
 * event tests only its key's matches, in the same list order. A match that completes is
 * marked and dropped from the list when it reaches its head (or when marked ones outnumber
 * the live); a match with a null key is never tested (a null equals nothing) but expires.
 *
 * <p>Input row layout (positions): {@code _seq} long, {@code _ts} long, starts a match
 * (bool), is an {@code S2} event (bool), passes the conditions on {@code e2} alone (bool),
 * the state key (int), the partition value (any), then the operator's columns. The spec
 * (JSON): {@code within} (ms, or null), {@code firsts} (the row positions of {@code e1}'s
 * columns, kept with a match), {@code keys} ({@code [e1 index, row position]} pairs),
 * {@code residual} (an {@link Expression}, or null), {@code selected} ({@code [side,
 * index]}: 0 a kept {@code e1} value, 1 a row position). Output: {@code _seq}, {@code _ts}
 * of the completing event, {@code _i} the output's place among that event's, then the
 * selected values.
 *
 * <p>State, one binary value per state key: per instance, its pending matches then its new
 * ones, each with its {@code _seq}, timestamp and kept values.
 */
public final class FollowedBy implements
        FlatMapGroupsWithStateFunction<Integer, Row, byte[], Row>, Serializable {
    private static final long serialVersionUID = 1L;
    private static final int PARTITION = 6;

    private final long within;
    private final int[] firsts;
    private final int[] keyFirst;
    private final int[] keyRow;
    private final Expression residual;
    private final int[] selectedSide;
    private final int[] selectedIndex;

    private FollowedBy(JsonNode spec) {
        JsonNode span = spec.get("within");
        this.within = span == null || span.isNull() ? Long.MAX_VALUE : span.asLong();
        this.firsts = ints(spec.get("firsts"), -1);
        this.keyFirst = ints(spec.get("keys"), 0);
        this.keyRow = ints(spec.get("keys"), 1);
        this.residual = Expression.parse(spec.get("residual"));
        this.selectedSide = ints(spec.get("selected"), 0);
        this.selectedIndex = ints(spec.get("selected"), 1);
    }

    /** The ints of a JSON array ({@code part} -1), or part {@code part} of each of its pairs. */
    static int[] ints(JsonNode array, int part) {
        int[] values = new int[array.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = (part < 0 ? array.get(i) : array.get(i).get(part)).asInt();
        }
        return values;
    }

    /** The pattern's outputs of {@code rows} (laid out as the class says) in {@code output}'s
     *  schema. */
    public static Dataset<Row> apply(Dataset<Row> rows, String spec, StructType output)
            throws IOException {
        FollowedBy step = new FollowedBy(new ObjectMapper().readTree(spec));
        return KeyColumn.stepped(rows, 5, step, output);
    }

    /** A partial match: its {@code e1}. */
    static final class Match {
        final long seq;
        final long ts;
        final Object[] values;
        /** Its equality key ({@link FollowedBy#key}), null when a part of it is null. */
        final Object key;
        boolean done;

        Match(long seq, long ts, Object[] values, Object key) {
            this.seq = seq;
            this.ts = ts;
            this.values = values;
            this.key = key;
        }
    }

    /** One pattern instance's pending and new lists (and the pending list by key). */
    static final class Instance {
        final ArrayDeque<Match> pending = new ArrayDeque<>();
        final Map<Object, ArrayDeque<Match>> byKey = new HashMap<>();
        final List<Match> fresh = new ArrayList<>();
        int done;

        void append(Match match) {
            pending.addLast(match);
            if (match.key != null) {
                byKey.computeIfAbsent(match.key, k -> new ArrayDeque<>()).addLast(match);
            }
        }

        boolean empty() {
            return pending.size() == done && fresh.isEmpty();
        }

        /** The pending matches of {@code key} (none for a null key: a null equals nothing)
         *  that {@code residual} accepts against {@code row}, in list order, taken off it. */
        List<Match> take(Object key, Expression residual, Row row) {
            ArrayDeque<Match> same = key == null ? null : byKey.get(key);
            if (same == null) {
                return List.of();
            }
            List<Match> taken = new ArrayList<>();
            for (Iterator<Match> each = same.iterator(); each.hasNext(); ) {
                Match match = each.next();
                if (residual == null || Expression.truthy(residual.evaluate(match.values, row))) {
                    each.remove();
                    match.done = true;
                    done += 1;
                    taken.add(match);
                }
            }
            if (same.isEmpty()) {
                byKey.remove(key);
            }
            compact();
            return taken;
        }

        /** Drops completed matches from the pending list once they outnumber the live. */
        void compact() {
            if (done > 64 && done * 2 > pending.size()) {
                pending.removeIf(m -> m.done);
                done = 0;
            }
        }
    }

    @Override
    public Iterator<Row> call(Integer key, Iterator<Row> input, GroupState<byte[]> state) {
        List<Row> rows = new ArrayList<>();
        input.forEachRemaining(rows::add);
        rows.sort(Comparator.comparingLong(row -> row.getLong(0)));
        Map<Object, Instance> instances = state.exists() ? restore(state.get())
                : new LinkedHashMap<>();
        List<Row> out = new ArrayList<>();
        for (Row row : rows) {
            step(instances, row, out);
        }
        state.update(snapshot(instances));
        return out.iterator();
    }

    private void step(Map<Object, Instance> instances, Row row, List<Row> out) {
        Object partition = row.get(PARTITION);
        Instance instance = instances.computeIfAbsent(partition, k -> new Instance());
        long now = row.getLong(1);
        expire(instance, now);
        instance.fresh.removeIf(m -> Math.abs(m.ts - now) > within);
        if (row.getBoolean(3)) {
            instance.fresh.sort(Comparator.comparingLong(m -> m.ts));  // a stable sort
            for (Match match : instance.fresh) {
                instance.append(match);
            }
            instance.fresh.clear();
            if (row.getBoolean(4)) {
                complete(instance, row, out);
            }
        }
        if (row.getBoolean(2)) {
            Object[] values = new Object[firsts.length];
            for (int i = 0; i < firsts.length; i++) {
                values[i] = row.get(firsts[i]);
            }
            instance.fresh.add(new Match(row.getLong(0), now, values, firstKey(values)));
        }
        if (instance.empty()) {
            instances.remove(partition);
        }
    }

    private void expire(Instance instance, long now) {
        while (!instance.pending.isEmpty()) {
            Match head = instance.pending.peekFirst();
            if (head.done) {
                instance.pending.pollFirst();
                instance.done -= 1;
                continue;
            }
            if (Math.abs(head.ts - now) <= within) {
                return;
            }
            instance.pending.pollFirst();
            if (head.key != null) {  // the first pending match of its key, too
                ArrayDeque<Match> same = instance.byKey.get(head.key);
                same.pollFirst();
                if (same.isEmpty()) {
                    instance.byKey.remove(head.key);
                }
            }
        }
    }

    private void complete(Instance instance, Row row, List<Row> out) {
        int position = 0;
        for (Match match : instance.take(rowKey(row), residual, row)) {
            Object[] emitted = new Object[3 + selectedSide.length];
            emitted[0] = row.getLong(0);
            emitted[1] = row.getLong(1);
            emitted[2] = position++;
            for (int i = 0; i < selectedSide.length; i++) {
                Object value = selectedSide[i] == 0 ? match.values[selectedIndex[i]]
                        : row.get(selectedIndex[i]);
                // a double NaN is null to the pattern (as Spark hands the runtime its rows)
                emitted[3 + i] = value instanceof Double && ((Double) value).isNaN()
                        ? null : value;
            }
            out.add(RowFactory.create(emitted));
        }
    }

    private Object firstKey(Object[] values) {
        return key(keyFirst, i -> values[i]);
    }

    private Object rowKey(Row row) {
        return key(keyRow, row::get);
    }

    /** The equality key read at {@code positions}, or null when a part is null (a null
     *  equals nothing): the value itself when there is one equality (the seed's
     *  {@code e1.roomNo == roomNo}: a boxed number hashes and compares without a list's
     *  iterators), else the list of them. */
    static Object key(int[] positions, IntFunction<Object> read) {
        if (positions.length == 1) {
            return Expression.normal(read.apply(positions[0]));
        }
        Object[] key = new Object[positions.length];
        for (int i = 0; i < key.length; i++) {
            key[i] = Expression.normal(read.apply(positions[i]));
            if (key[i] == null) {
                return null;
            }
        }
        return Arrays.asList(key);
    }

    // -- state ---------------------------------------------------------------------------

    private byte[] snapshot(Map<Object, Instance> instances) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(instances.size());
            for (Map.Entry<Object, Instance> entry : instances.entrySet()) {
                StateValues.write(out, entry.getKey());
                writeMatches(out, entry.getValue());
            }
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        return bytes.toByteArray();
    }

    /** An instance's live pending matches, then its new ones. */
    static void writeMatches(DataOutputStream out, Instance instance) throws IOException {
        out.writeInt(instance.pending.size() - instance.done);
        for (Match match : instance.pending) {
            if (!match.done) {
                writeMatch(out, match);
            }
        }
        out.writeInt(instance.fresh.size());
        for (Match match : instance.fresh) {
            writeMatch(out, match);
        }
    }

    private static void writeMatch(DataOutputStream out, Match match) throws IOException {
        out.writeLong(match.seq);
        out.writeLong(match.ts);
        for (Object value : match.values) {
            StateValues.write(out, value);
        }
    }

    private Map<Object, Instance> restore(byte[] state) {
        Map<Object, Instance> instances = new LinkedHashMap<>();
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(state))) {
            for (int i = in.readInt(); i > 0; i--) {
                Instance instance = new Instance();
                instances.put(StateValues.read(in), instance);
                for (int p = in.readInt(); p > 0; p--) {
                    instance.append(readMatch(in));
                }
                for (int f = in.readInt(); f > 0; f--) {
                    instance.fresh.add(readMatch(in));
                }
            }
        } catch (IOException error) {
            throw new UncheckedIOException(error);
        }
        return instances;
    }

    private Match readMatch(DataInputStream in) throws IOException {
        return readMatch(in, firsts.length, keyFirst);
    }

    /** A match written by {@link #writeMatch}: {@code kept} values of {@code e1}, keyed at
     *  {@code keyFirst}. */
    static Match readMatch(DataInputStream in, int kept, int[] keyFirst) throws IOException {
        long seq = in.readLong();
        long ts = in.readLong();
        Object[] values = new Object[kept];
        for (int i = 0; i < values.length; i++) {
            values[i] = StateValues.read(in);
        }
        return new Match(seq, ts, values, key(keyFirst, i -> values[i]));
    }
}
