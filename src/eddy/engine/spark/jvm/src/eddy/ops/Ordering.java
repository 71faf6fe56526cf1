package eddy.ops;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * A query's {@code order by}, {@code offset} and {@code limit} over the selected events of
 * one emission of {@link WindowAggregate}, as the per-event runtime's selector applies them
 * ({@code eddy.runtime.selector}, the reference's {@code QuerySelector}): each run of events
 * of one kind (expired, current) sorted on its own, stably, by the selected values (nulls
 * last in either direction; doubles as {@code Double.compare}, strings by code point); then
 * the first {@code offset} events dropped; then {@code limit} current events kept, every
 * expired one kept and counted (the reference's precedence slip in
 * {@code limitEventChunk}). An emission of an aggregate without {@code group by} is its last
 * event alone: {@code order by} does not apply, and the event goes out only when there is
 * no offset and the limit is not zero.
 */
final class Ordering implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Per key: the selected value's index and whether it ascends. */
    private final int[] values;
    private final boolean[] ascending;
    /** -1: none. */
    private final long limit;
    private final long offset;

    private Ordering(int[] values, boolean[] ascending, long limit, long offset) {
        this.values = values;
        this.ascending = ascending;
        this.limit = limit;
        this.offset = offset;
    }

    /** {@code {"keys": [[value, ascending], ...], "limit": n|null, "offset": n|null}}. */
    static Ordering parse(JsonNode spec) {
        JsonNode keys = spec.get("keys");
        int[] values = new int[keys.size()];
        boolean[] ascending = new boolean[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            values[i] = keys.get(i).get(0).asInt();
            ascending[i] = keys.get(i).get(1).asBoolean();
        }
        return new Ordering(values, ascending, count(spec.get("limit")),
                count(spec.get("offset")));
    }

    private static long count(JsonNode value) {
        return value == null || value.isNull() ? -1 : value.asLong();
    }

    /** Whether an emission of one event goes out (the last of an aggregate without
     *  {@code group by}, or a current event that is its input's only output). */
    boolean keepsOne() {
        return offset <= 0 && limit != 0;
    }

    /**
     * The emission's events in the order they go out, and only those: {@code events} are
     * output rows whose selected values start at {@code first} and whose kind (expired) is
     * at {@code kind}.
     */
    List<Object[]> apply(List<Object[]> events, int first, int kind) {
        List<Object[]> sorted = new ArrayList<>(events.size());
        int start = 0;
        for (int i = 1; i <= events.size(); i++) {
            if (i == events.size() || events.get(i)[kind] != events.get(start)[kind]) {
                List<Object[]> run = new ArrayList<>(events.subList(start, i));
                if (values.length > 0) {
                    run.sort((a, b) -> compare(a, b, first));
                }
                sorted.addAll(run);
                start = i;
            }
        }
        List<Object[]> kept = new ArrayList<>(sorted.size());
        long count = 0;
        for (int i = 0; i < sorted.size(); i++) {
            if (i < offset) {
                continue;
            }
            Object[] event = sorted.get(i);
            if (Boolean.TRUE.equals(event[kind]) || limit < 0 || count < limit) {
                kept.add(event);
                count += 1;
            }
        }
        return kept;
    }

    private int compare(Object[] a, Object[] b, int first) {
        for (int k = 0; k < values.length; k++) {
            Object left = a[first + values[k]];
            Object right = b[first + values[k]];
            if (left != null && right != null) {
                int result = compareValues(left, right);
                if (result != 0) {
                    return ascending[k] ? result : -result;
                }
            } else if (left != null) {
                return -1;
            } else if (right != null) {
                return 1;
            }
        }
        return 0;
    }

    /** Two non-null values of one attribute, as the runtime's {@code java_compare}. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static int compareValues(Object left, Object right) {
        if (left instanceof Double || right instanceof Double) {
            return Double.compare(((Number) left).doubleValue(), ((Number) right).doubleValue());
        }
        if (left instanceof String) {
            return Integer.signum(codePoints((String) left, (String) right));
        }
        return Integer.signum(((Comparable) left).compareTo(right));
    }

    /** Strings compared by code point (the runtime's order), not by UTF-16 unit. */
    private static int codePoints(String left, String right) {
        int i = 0;
        int j = 0;
        while (i < left.length() && j < right.length()) {
            int a = left.codePointAt(i);
            int b = right.codePointAt(j);
            if (a != b) {
                return Integer.compare(a, b);
            }
            i += Character.charCount(a);
            j += Character.charCount(b);
        }
        return Boolean.compare(i < left.length(), j < right.length());
    }
}
