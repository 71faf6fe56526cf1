package eddy.ops;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.function.Function;

/**
 * The sessions of a {@code #window.session} ({@link SessionWindow}): per session key the
 * current and the previous session, the keys in the order the reference's
 * {@code ConcurrentHashMap} iterates them ({@link KeyOrder}), and the capacity its
 * end-time {@code HashMap} has grown to; both orders decide which of two sessions ending
 * at the same time leaves first, as the per-event runtime's {@code javahash} reproduces.
 */
final class Sessions {
    final KeyOrder order = new KeyOrder();
    final Map<String, Session[]> byKey = new HashMap<>();
    int endCapacity = 16;

    /** A {@code SessionComplexEventChunk}: its events (to leave as expired events), its
     *  times and its iterator's cursor (-1: none), where late events are inserted. */
    static final class Session {
        final List<WindowState.Entry> events = new ArrayList<>();
        long start;
        long end;
        long alive;
        int cursor = -1;

        void setTimes(long start, long end, long alive) {
            this.start = start;
            this.end = end;
            this.alive = alive;
        }

        void clear() {
            events.clear();
            cursor = -1;
        }

        /** {@code if (hasNext()) next(); insertBeforeCurrent(events)}. */
        void insertBeforeCursor(List<WindowState.Entry> inserted) {
            if (cursor < 0) {
                if (!events.isEmpty()) {
                    cursor = 0;
                }
            } else if (cursor + 1 < events.size()) {
                cursor++;
            }
            events.addAll(Math.max(cursor, 0), inserted);
            if (cursor >= 0) {
                cursor += inserted.size();
            }
        }
    }

    /** The key's current and previous session, made (and ordered) when it has none. */
    Session[] of(String key) {
        Session[] pair = byKey.get(key);
        if (pair == null) {
            pair = new Session[] {new Session(), new Session()};
            byKey.put(key, pair);
            order.add(key);
        }
        return pair;
    }

    /** The keys whose {@code which} session (0 current, 1 previous) has events, by its end;
     *  ties in the iteration order of a {@code HashMap} filled in {@link #order}. */
    List<String> byEnd(int which) {
        List<String> keys = new ArrayList<>();
        for (String key : order) {
            if (!byKey.get(key)[which].events.isEmpty()) {
                keys.add(key);
            }
        }
        endCapacity = KeyOrder.capacity(keys.size(), endCapacity);
        if (keys.size() <= 1) {
            return keys;
        }
        int mask = endCapacity - 1;  // (both sorts are stable: a bucket keeps insertion order)
        keys.sort(Comparator.comparingInt(key -> KeyOrder.spread(key.hashCode()) & mask));
        keys.sort(Comparator.comparingLong(key -> byKey.get(key)[which].end));
        return keys;
    }

    /**
     * The key order of a {@code java.util.concurrent.ConcurrentHashMap} of string keys: its
     * bins, grown by {@code transfer} as the map grows them (the {@code lastRun} of a bin
     * keeps its order, the nodes before it are reversed). Keys are never removed.
     */
    static final class KeyOrder implements Iterable<String> {
        private List<List<String>> bins = new ArrayList<>();
        private final Set<String> members = new HashSet<>();

        static int spread(int h) {
            return (h ^ (h >>> 16)) & 0x7fffffff;
        }

        /** The capacity a {@code HashMap} of {@code capacity} slots grows to at {@code size}
         *  keys. */
        static int capacity(int size, int capacity) {
            while (size > capacity * 3 / 4) {
                capacity *= 2;
            }
            return capacity;
        }

        void add(String key) {
            if (!members.add(key)) {
                return;
            }
            if (bins.isEmpty()) {
                bins = emptyBins(16);
            }
            bins.get(spread(key.hashCode()) & (bins.size() - 1)).add(key);
            int n = bins.size();
            while (members.size() >= n - (n >> 2)) {  // sizeCtl: three quarters of the table
                transfer();
                n = bins.size();
            }
        }

        private static List<List<String>> emptyBins(int count) {
            List<List<String>> empty = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                empty.add(new ArrayList<>());
            }
            return empty;
        }

        private void transfer() {
            int n = bins.size();
            List<List<String>> grown = emptyBins(2 * n);
            for (int i = 0; i < n; i++) {
                List<String> bin = bins.get(i);
                if (bin.isEmpty()) {
                    continue;
                }
                int runBit = spread(bin.get(0).hashCode()) & n;
                int lastRun = 0;
                for (int j = 1; j < bin.size(); j++) {
                    int bit = spread(bin.get(j).hashCode()) & n;
                    if (bit != runBit) {
                        runBit = bit;
                        lastRun = j;
                    }
                }
                List<String> low = grown.get(i);
                List<String> high = grown.get(i + n);
                (runBit == 0 ? low : high).addAll(bin.subList(lastRun, bin.size()));
                for (String key : bin.subList(0, lastRun)) {
                    ((spread(key.hashCode()) & n) == 0 ? low : high).add(0, key);
                }
            }
            bins = grown;
        }

        @Override
        public Iterator<String> iterator() {
            return new Iterator<>() {
                private int bin;
                private int at;

                @Override
                public boolean hasNext() {
                    while (bin < bins.size() && at >= bins.get(bin).size()) {
                        bin++;
                        at = 0;
                    }
                    return bin < bins.size();
                }

                @Override
                public String next() {
                    if (!hasNext()) {
                        throw new NoSuchElementException();
                    }
                    return bins.get(bin).get(at++);
                }
            };
        }

        void write(DataOutputStream out) throws IOException {
            out.writeInt(bins.size());
            for (List<String> bin : bins) {
                out.writeInt(bin.size());
                for (String key : bin) {
                    out.writeUTF(key);
                }
            }
        }

        void read(DataInputStream in) throws IOException {
            bins = emptyBins(in.readInt());
            for (List<String> bin : bins) {
                for (int count = in.readInt(); count > 0; count--) {
                    String key = in.readUTF();
                    bin.add(key);
                    members.add(key);
                }
            }
        }
    }

    /** The sessions' bytes: the key order, the end map's capacity, then per key (in that
     *  order) its two sessions' times, cursor and events ({@code entry} writes one). */
    void write(DataOutputStream out, EntryWriter entry) throws IOException {
        order.write(out);
        out.writeInt(endCapacity);
        for (String key : order) {
            for (Session session : byKey.get(key)) {
                out.writeLong(session.start);
                out.writeLong(session.end);
                out.writeLong(session.alive);
                out.writeInt(session.cursor);
                out.writeInt(session.events.size());
                for (WindowState.Entry event : session.events) {
                    entry.write(event);
                }
            }
        }
    }

    void read(DataInputStream in, Function<DataInputStream, WindowState.Entry> entry)
            throws IOException {
        order.read(in);
        endCapacity = in.readInt();
        for (String key : order) {
            Session[] pair = {new Session(), new Session()};
            for (Session session : pair) {
                session.setTimes(in.readLong(), in.readLong(), in.readLong());
                session.cursor = in.readInt();
                for (int count = in.readInt(); count > 0; count--) {
                    session.events.add(entry.apply(in));
                }
            }
            byKey.put(key, pair);
        }
    }

    /** Writes one session event (the window's entry layout). */
    interface EntryWriter {
        void write(WindowState.Entry entry) throws IOException;
    }
}
