package eddy.ops;

import java.io.Serializable;
import java.util.ArrayDeque;
import java.util.List;

import eddy.ops.Sessions.Session;

/**
 * {@code #window.session(gap [, key] [, allowed.latency])} for {@link WindowAggregate}, step
 * by step as the per-event runtime's {@code SessionWindow} runs it (its quirks included):
 * every admitted event passes through as a current event; its key's current session takes
 * it (a new one when it has none; an event past the session's end starts a new one only
 * with a latency, the current moving to "previous"; without one it joins nothing); each
 * event asks for a timer at its session's end. A timer due at {@code t} closes every
 * session ending by {@code t} (by end, ties in the reference's hash-map order): its events
 * leave as expired events with their own timestamps — or, with a latency, the session
 * becomes the previous one for that much longer, so late events can still join or merge
 * the two. An event older than its key's sessions by more than the gap is dropped
 * (neither output nor aggregated).
 */
final class SessionWindow implements Serializable {
    private static final long serialVersionUID = 1L;

    static final String DEFAULT_KEY = "default-key";

    private final long gap;
    private final long latency;

    SessionWindow(long gap, long latency) {
        this.gap = gap;
        this.latency = latency;
    }

    /**
     * A passing event ({@code entry}, its own timestamp) of session key {@code key} arrives;
     * timers it asks for go to {@code timers}, events it pushes out of a previous session
     * to {@code expired}. False when it is too late for any session (dropped).
     */
    boolean arrive(Sessions sessions, String key, WindowState.Entry entry,
                   ArrayDeque<Long> timers, List<WindowState.Entry> expired) {
        long ts = entry.ts;
        long end = ts + gap;
        long alive = end + latency;
        Session[] pair = sessions.of(key);
        Session current = pair[0];
        if (current.events.isEmpty()) {
            current.events.add(entry);
            current.setTimes(ts, end, alive);
            timers.addLast(end);
        } else if (ts >= current.start) {
            if (ts <= current.end) {
                current.setTimes(current.start, end, alive);
                current.events.add(entry);
                timers.addLast(end);
            } else if (latency > 0) {
                moveToPrevious(pair, timers, expired);
                current.clear();
                current.setTimes(ts, end, alive);
                current.events.add(entry);
                timers.addLast(end);
            }
        } else {
            return late(ts, entry, pair);
        }
        return true;
    }

    /** The timer due at {@code due} fires: the sessions it closes; their events leaving
     *  now go to {@code expired}. */
    void timeout(Sessions sessions, long due, ArrayDeque<Long> timers,
                 List<WindowState.Entry> expired) {
        for (String key : sessions.byEnd(0)) {
            Session[] pair = sessions.byKey.get(key);
            Session current = pair[0];
            if (current.events.isEmpty() || due < current.end) {
                break;
            }
            if (latency > 0) {
                pair[1].events.addAll(current.events);
                pair[1].setTimes(current.start, current.end, current.alive);
                timers.addLast(current.alive);
            } else {
                expired.addAll(current.events);
            }
            current.clear();
        }
        if (latency <= 0) {
            return;
        }
        for (String key : sessions.byEnd(1)) {
            Session previous = sessions.byKey.get(key)[1];
            if (previous.events.isEmpty() || due < previous.alive) {
                break;
            }
            expired.addAll(previous.events);
            previous.clear();
        }
    }

    private void moveToPrevious(Session[] pair, ArrayDeque<Long> timers,
                                List<WindowState.Entry> expired) {
        Session current = pair[0];
        Session previous = pair[1];
        if (!previous.events.isEmpty()) {
            expired.addAll(previous.events);
            previous.clear();
        }
        previous.events.addAll(current.events);
        previous.setTimes(current.start, current.end, current.alive);
        timers.addLast(current.alive);
    }

    private void merge(Session previous, Session current) {
        if (!previous.events.isEmpty() && previous.end >= current.start - gap) {
            current.insertBeforeCursor(previous.events);
            current.start = previous.start;
            previous.clear();
        }
    }

    /** Files an event older than its key's current session; false if it is dropped. */
    private boolean late(long ts, WindowState.Entry entry, Session[] pair) {
        Session current = pair[0];
        Session previous = pair[1];
        if (latency <= 0) {
            if (ts >= current.start - gap) {
                current.insertBeforeCursor(List.of(entry));
                current.start = ts;
                return true;
            }
            return false;
        }
        if (ts >= current.start - gap) {
            current.insertBeforeCursor(List.of(entry));
            current.start = ts;
            merge(previous, current);
            return true;
        }
        if (previous.events.isEmpty()) {
            return false;
        }
        if (ts >= previous.start - gap) {
            previous.events.add(entry);
            if (ts <= previous.end - gap && ts < previous.start) {
                previous.start = ts;
            } else {
                previous.end = ts + gap;
                previous.alive = ts + gap + latency;
                merge(previous, current);
            }
            return true;
        }
        return false;
    }
}
