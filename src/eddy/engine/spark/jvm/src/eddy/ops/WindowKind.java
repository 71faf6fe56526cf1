package eddy.ops;

/**
 * The windows {@link WindowAggregate} runs, by their Siddhi names, and what each asks of
 * the operator's row loop: whether its events wait for a batch, and whether a row of
 * another stream (or one that fails the filters) still moves its clock.
 */
enum WindowKind {
    TIME("time"),
    LENGTH("length"),
    /** {@code timeLength(t, n)}: a time window of at most {@code n} events, each leaving
     *  by its own timestamp (a length eviction can let a younger event out first). */
    TIME_LENGTH("timeLength"),
    /** {@code externalTime(a, t)}: the clock is a timestamp attribute. */
    EXTERNAL_TIME("externalTime"),
    EXTERNAL_TIME_BATCH("externalTimeBatch"),
    /** {@code sort(n, a [, order], ...)}. */
    SORT("sort"),
    LENGTH_BATCH("lengthBatch"),
    TIME_BATCH("timeBatch"),
    /** {@code delay(t)}: each passing event released {@code t} later as a current event. */
    DELAY("delay"),
    /** {@code session(gap [, key] [, latency])}: {@link SessionWindow}. */
    SESSION("session"),
    /** No window: every passing event aggregates and none ever leaves (current events). */
    NONE("none");

    private final String siddhiName;

    WindowKind(String siddhiName) {
        this.siddhiName = siddhiName;
    }

    static WindowKind named(String name) {
        for (WindowKind kind : values()) {
            if (kind.siddhiName.equals(name)) {
                return kind;
            }
        }
        throw new IllegalArgumentException("no Java window aggregate for #window." + name);
    }

    /** Its events wait for their batch ({@code WindowState.pending}) before they count. */
    boolean batch() {
        return this == LENGTH_BATCH || this == TIME_BATCH || this == EXTERNAL_TIME_BATCH;
    }

    /** Its events wait ({@code WindowState.pending}) and it emits chunks: a batch, or the
     *  delay's releases. */
    boolean holds() {
        return batch() || this == DELAY;
    }

    /** Its clock is its own timestamp attribute, moved only by the rows that pass. */
    boolean external() {
        return this == EXTERNAL_TIME || this == EXTERNAL_TIME_BATCH;
    }
}
