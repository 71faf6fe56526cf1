package eddy.ops;

import java.io.Serializable;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.spark.sql.Row;

/**
 * A compiled Siddhi expression over two events (a pattern's {@code e1} and the row at hand),
 * with the per-event runtime's Java semantics, node for node as the NumPy evaluator
 * ({@code eddy.engine.operators.columnar_expressions}) computes them: {@code int} arithmetic
 * wraps at 32 bits and {@code long} at 64, division truncates, {@code /} and {@code %} by
 * zero give null, a comparison with a null operand is false ({@code !=} true), never null,
 * {@code and}/{@code or}/{@code not} read null as false, and a double NaN read from a column
 * is null.
 *
 * <p>Built from the JSON the Python side writes: {@code op} ({@code col}, {@code const},
 * {@code isnull}, {@code not}, {@code neg}, {@code and}/{@code or}, a comparison or an
 * arithmetic operator), {@code type} (the node's result type, an {@code AttrType} name),
 * {@code operand} (the type both operands are converted to), {@code children}; a column
 * names its {@code side} (0: the first event's kept values, 1: the row) and {@code index}
 * there; a constant its {@code value} as text. Values are Long (int and long), Double,
 * String, Boolean or null.
 */
final class Expression implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The operator, resolved once ({@link #code}): an evaluation dispatches on an int. */
    private final int op;
    private final boolean comparison;
    private final boolean integralInt;
    private final boolean doubleType;
    private final boolean doubleOperand;
    private final Object constant;
    private final int side;
    private final int index;
    private final Expression[] children;

    private Expression(JsonNode node) {
        this.op = code(node.get("op").asText());
        this.comparison = op >= EQ;
        String type = node.get("type").asText();
        this.integralInt = "INT".equals(type);
        this.doubleType = "DOUBLE".equals(type);
        JsonNode operand = node.get("operand");
        this.doubleOperand = operand != null && "DOUBLE".equals(operand.asText());
        this.side = node.has("side") ? node.get("side").asInt() : -1;
        this.index = node.has("index") ? node.get("index").asInt() : -1;
        this.constant = op == CONST ? constant(type, node.get("value")) : null;
        JsonNode kids = node.get("children");
        this.children = new Expression[kids == null ? 0 : kids.size()];
        for (int i = 0; i < children.length; i++) {
            children[i] = new Expression(kids.get(i));
        }
    }

    private static final int COL = 0, CONST = 1, ISNULL = 2, NOT = 3, AND = 4, OR = 5, NEG = 6,
            ADD = 7, SUB = 8, MUL = 9, DIV = 10, MOD = 11,
            EQ = 12, NE = 13, LT = 14, LE = 15, GT = 16, GE = 17;
    private static final String[] NAMES = {"col", "const", "isnull", "not", "and", "or", "neg",
        "+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">="};

    private static int code(String name) {
        for (int i = 0; i < NAMES.length; i++) {
            if (NAMES[i].equals(name)) {
                return i;
            }
        }
        throw new IllegalArgumentException("an expression operator eddy's Java operators "
                + "do not know: " + name);
    }

    static Expression parse(JsonNode node) {
        return node == null || node.isNull() ? null : new Expression(node);
    }

    private static Object constant(String type, JsonNode value) {
        if (value == null || value.isNull()) {
            return null;
        }
        String text = value.asText();
        switch (type) {
            case "INT":
            case "LONG":
                return Long.parseLong(text);
            case "DOUBLE":
                return Double.parseDouble(text);
            case "BOOL":
                return Boolean.parseBoolean(text);
            default:
                return text;
        }
    }

    /** A value as the evaluator holds it: ints as Long, a double NaN as null. */
    static Object normal(Object value) {
        if (value instanceof Integer) {
            return Long.valueOf((Integer) value);
        }
        if (value instanceof Double && ((Double) value).isNaN()) {
            return null;
        }
        return value;
    }

    static boolean truthy(Object value) {
        return Boolean.TRUE.equals(value);
    }

    /** The value over the first event's kept values {@code first} and {@code row}. */
    Object evaluate(Object[] first, Row row) {
        switch (op) {
            case COL:
                return normal(side == 0 ? first[index] : row.get(index));
            case CONST:
                return constant;
            case ISNULL:
                return children[0].evaluate(first, row) == null;
            case NOT:
                return !truthy(children[0].evaluate(first, row));
            case AND: {
                boolean left = truthy(children[0].evaluate(first, row));
                return truthy(children[1].evaluate(first, row)) && left;
            }
            case OR: {
                boolean left = truthy(children[0].evaluate(first, row));
                return truthy(children[1].evaluate(first, row)) || left;
            }
            case NEG:
                return negate(children[0].evaluate(first, row));
            default:
                return binary(children[0].evaluate(first, row), children[1].evaluate(first, row));
        }
    }

    private Object negate(Object value) {
        if (value == null) {
            return null;
        }
        if (value instanceof Double) {
            return -(Double) value;
        }
        long negated = -(Long) value;
        return integralInt ? (long) (int) negated : negated;
    }

    private Object binary(Object left, Object right) {
        if (left == null || right == null) {
            return comparison ? (Object) (op == NE) : null;
        }
        if (comparison) {
            return compare(left, right);
        }
        if (doubleType) {
            double x = ((Number) left).doubleValue();
            double y = ((Number) right).doubleValue();
            switch (op) {
                case ADD: return x + y;
                case SUB: return x - y;
                case MUL: return x * y;
                case DIV: return y == 0.0 ? null : x / y;
                default: return y == 0.0 ? null : x % y;
            }
        }
        long x = (Long) left;
        long y = (Long) right;
        long result;
        switch (op) {
            case ADD: result = x + y; break;
            case SUB: result = x - y; break;
            case MUL: result = x * y; break;
            case DIV:
                if (y == 0) {
                    return null;
                }
                result = x / y;  // Java truncates, and MIN / -1 wraps to MIN
                break;
            default:
                if (y == 0) {
                    return null;
                }
                result = x % y;
        }
        return integralInt ? (long) (int) result : result;
    }

    private boolean compare(Object left, Object right) {
        if (doubleOperand) {
            double x = ((Number) left).doubleValue();
            double y = ((Number) right).doubleValue();
            switch (op) {  // primitive comparisons: NaN equals nothing, as in numpy
                case EQ: return x == y;
                case NE: return x != y;
                case LT: return x < y;
                case LE: return x <= y;
                case GT: return x > y;
                default: return x >= y;
            }
        }
        int order;
        if (left instanceof Long && right instanceof Long) {
            order = Long.compare((Long) left, (Long) right);
        } else if (left instanceof Boolean && right instanceof Boolean) {
            order = Boolean.compare((Boolean) left, (Boolean) right);
        } else {
            order = left.equals(right) ? 0 : 1;  // strings: equality only
        }
        switch (op) {
            case EQ: return order == 0;
            case NE: return order != 0;
            case LT: return order < 0;
            case LE: return order <= 0;
            case GT: return order > 0;
            default: return order >= 0;
        }
    }
}
