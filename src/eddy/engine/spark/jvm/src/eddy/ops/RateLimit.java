package eddy.ops;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A query's {@code output [all|first|last] every N events} or {@code every <time>} over the
 * {@link Selector}'s emissions, as the per-event runtime's limiters
 * ({@code eddy.runtime.ratelimit}) run it, quirks included: {@code first every N events}
 * without {@code group by} and {@code N = 1} lets only the very first event out;
 * {@code first every <time>} opens a period at the clock of the emission whose first event
 * it lets out; {@code all}/{@code last every <time>} flush on a timer of their own, armed
 * one period after the group's first row and re-armed a period after each due time, that
 * fires on a row of any stream whose timestamp reaches it (not on a late one) — after the
 * window's own timer, before the row's own emission.
 *
 * <p>Each window has its own (in a value partition, each value's: Siddhi gives each key
 * its own query, limit included; only limits by event count there). An output row is laid
 * out as the selector's emissions are ({@code _seq}, {@code _ts}, {@code _i}, {@code _x},
 * {@code _timer}, ..., the selected values); a held event keeps its own timestamp and kind
 * and goes out in the emission that releases it.
 */
final class RateLimit implements Serializable {
    private static final long serialVersionUID = 1L;

    private final char type;
    private final boolean timed;
    private final long value;
    private final int groups;
    private final int width;

    private RateLimit(char type, boolean timed, long value, int groups, int width) {
        this.type = type;
        this.timed = timed;
        this.value = value;
        this.groups = groups;
        this.width = width;
    }

    /** {@code spec}: {@code <all|first|last>:<events|time>:<count or ms>}, or empty for
     *  none; {@code width}: an output row's length. */
    static RateLimit parse(String spec, int groups, int width) {
        if (spec.isEmpty()) {
            return null;
        }
        String[] parts = spec.split(":");
        return new RateLimit(parts[0].charAt(0), "time".equals(parts[1]),
                Long.parseLong(parts[2]), groups, width);
    }

    /** Whether a timer of its own flushes it ({@code all}/{@code last every <time>}). */
    boolean scheduled() {
        return timed && type != 'f';
    }

    /** What it keeps between emissions (and micro-batches). */
    static final class State {
        /** The events counted since the last release. */
        long count;
        boolean started;
        /** The group's clock: the largest timestamp of its rows. */
        long now;
        /** The timer's next due time; whether it fell due at the row being processed. */
        long due;
        boolean flushDue;
        /** {@code first every <time>} without {@code group by}: its period's opening. */
        Long opened;
        /** {@code all}: the events held, in order. */
        final List<Object[]> held = new ArrayList<>();
        /** {@code last}: each group's last event, in order of the group's first. */
        final Map<Object, Object[]> last = new LinkedHashMap<>();
        /** {@code first} with {@code group by}: each group's count or period's opening. */
        final Map<Object, Long> perGroup = new HashMap<>();
    }

    /** A row of the group at {@code ts} moves the clock (the first arms the timer); a due
     *  timer flushes at {@link #pendingFlush}. */
    void advance(State state, long ts) {
        if (!state.started) {
            state.started = true;
            state.due = ts + value;
        }
        if (ts < state.now) {
            return;  // a late row fires no timer
        }
        state.now = ts;
        if (scheduled() && state.due <= ts) {
            state.flushDue = true;  // (the re-armed timers due at the same row flush nothing)
            state.due += ((ts - state.due) / value + 1) * value;
        }
    }

    /** The timer's flush when it fell due at the row being processed (else null). */
    List<Object[]> pendingFlush(State state) {
        if (!state.flushDue) {
            return null;
        }
        state.flushDue = false;
        List<Object[]> out;
        if (type == 'a') {
            out = new ArrayList<>(state.held);
            state.held.clear();
        } else {
            out = new ArrayList<>(state.last.values());
            state.last.clear();
        }
        return out;
    }

    /** The events one emission lets out now ({@code keys}: each event's group). */
    List<Object[]> process(State state, List<Object[]> events, List<Object> keys) {
        List<Object[]> out = new ArrayList<>();
        if (timed && type == 'f') {
            firstPerTime(state, events, keys, out);
            return out;
        }
        for (int i = 0; i < events.size(); i++) {
            Object[] event = events.get(i);
            Object key = groups > 0 ? keys.get(i) : WindowState.NO_GROUP;
            if (type == 'a') {
                state.held.add(event);
            } else if (type == 'l') {
                state.last.put(key, event);
            } else if (groups > 0) {
                firstGroupPerEvents(state, event, key, out);
                continue;
            } else {
                state.count++;
                if (state.count == 1) {
                    out.add(event);
                } else if (state.count == value) {
                    state.count = 0;
                }
                continue;
            }
            if (timed) {
                continue;
            }
            state.count++;
            if (state.count == value) {
                state.count = 0;
                out.addAll(type == 'a' ? state.held : state.last.values());
                state.held.clear();
                state.last.clear();
            }
        }
        return out;
    }

    private void firstGroupPerEvents(State state, Object[] event, Object key,
                                     List<Object[]> out) {
        Long count = state.perGroup.get(key);
        if (count == null) {
            state.perGroup.put(key, 1L);
            out.add(event);
        } else if (count == value - 1) {
            state.perGroup.remove(key);
        } else {
            state.perGroup.put(key, count + 1);
        }
    }

    private void firstPerTime(State state, List<Object[]> events, List<Object> keys,
                              List<Object[]> out) {
        if (groups == 0) {
            if (state.opened == null || state.opened + value <= state.now) {
                state.opened = state.now;
                out.add(events.get(0));
            }
            return;
        }
        for (int i = 0; i < events.size(); i++) {
            Long opened = state.perGroup.get(keys.get(i));
            if (opened == null || opened + value <= state.now) {
                state.perGroup.put(keys.get(i), state.now);
                out.add(events.get(i));
            }
        }
    }

    /** Its state's bytes, after its window's ({@link WindowState.Codec}). */
    void write(DataOutputStream out, State state) throws IOException {
        out.writeLong(state.count);
        out.writeBoolean(state.started);
        out.writeLong(state.now);
        out.writeLong(state.due);
        StateValues.write(out, state.opened);
        out.writeInt(state.held.size());
        for (Object[] event : state.held) {
            writeEvent(out, event);
        }
        out.writeInt(state.last.size());
        for (Map.Entry<Object, Object[]> entry : state.last.entrySet()) {
            WindowState.writeKey(out, groups, entry.getKey());
            writeEvent(out, entry.getValue());
        }
        out.writeInt(state.perGroup.size());
        for (Map.Entry<Object, Long> entry : state.perGroup.entrySet()) {
            WindowState.writeKey(out, groups, entry.getKey());
            out.writeLong(entry.getValue());
        }
    }

    State read(DataInputStream in) throws IOException {
        State state = new State();
        state.count = in.readLong();
        state.started = in.readBoolean();
        state.now = in.readLong();
        state.due = in.readLong();
        state.opened = (Long) StateValues.read(in);
        for (int n = in.readInt(); n > 0; n--) {
            state.held.add(readEvent(in));
        }
        for (int n = in.readInt(); n > 0; n--) {
            Object key = WindowState.readKey(in, groups);
            state.last.put(key, readEvent(in));
        }
        for (int n = in.readInt(); n > 0; n--) {
            Object key = WindowState.readKey(in, groups);
            state.perGroup.put(key, in.readLong());
        }
        return state;
    }

    /** A held event's fields (those of its emission are restamped when it goes out). */
    private static void writeEvent(DataOutputStream out, Object[] event) throws IOException {
        out.writeInt(event.length);
        for (Object field : event) {
            StateValues.write(out, field);
        }
    }

    private Object[] readEvent(DataInputStream in) throws IOException {
        Object[] event = new Object[in.readInt()];
        if (event.length != width) {
            throw new IOException("a rate limit's state of another query's shape");
        }
        for (int i = 0; i < event.length; i++) {
            event[i] = StateValues.read(in);
        }
        return event;
    }
}
