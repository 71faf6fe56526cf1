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

    private final String op;
    private final boolean integralInt;
    private final boolean doubleType;
    private final boolean doubleOperand;
    private final Object constant;
    private final int side;
    private final int index;
    private final Expression[] children;

    private Expression(JsonNode node) {
        this.op = node.get("op").asText();
        String type = node.get("type").asText();
        this.integralInt = "INT".equals(type);
        this.doubleType = "DOUBLE".equals(type);
        JsonNode operand = node.get("operand");
        this.doubleOperand = operand != null && "DOUBLE".equals(operand.asText());
        this.side = node.has("side") ? node.get("side").asInt() : -1;
        this.index = node.has("index") ? node.get("index").asInt() : -1;
        this.constant = "const".equals(op) ? constant(type, node.get("value")) : null;
        JsonNode kids = node.get("children");
        this.children = new Expression[kids == null ? 0 : kids.size()];
        for (int i = 0; i < children.length; i++) {
            children[i] = new Expression(kids.get(i));
        }
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
            case "col":
                return normal(side == 0 ? first[index] : row.get(index));
            case "const":
                return constant;
            case "isnull":
                return children[0].evaluate(first, row) == null;
            case "not":
                return !truthy(children[0].evaluate(first, row));
            case "and": {
                boolean left = truthy(children[0].evaluate(first, row));
                return truthy(children[1].evaluate(first, row)) && left;
            }
            case "or": {
                boolean left = truthy(children[0].evaluate(first, row));
                return truthy(children[1].evaluate(first, row)) || left;
            }
            case "neg":
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
        boolean comparison = op.equals("==") || op.equals("!=") || op.equals("<")
                || op.equals("<=") || op.equals(">") || op.equals(">=");
        if (left == null || right == null) {
            return comparison ? (Object) op.equals("!=") : null;
        }
        if (comparison) {
            return compare(left, right);
        }
        if (doubleType) {
            double x = ((Number) left).doubleValue();
            double y = ((Number) right).doubleValue();
            switch (op) {
                case "+": return x + y;
                case "-": return x - y;
                case "*": return x * y;
                case "/": return y == 0.0 ? null : x / y;
                default: return y == 0.0 ? null : x % y;
            }
        }
        long x = (Long) left;
        long y = (Long) right;
        long result;
        switch (op) {
            case "+": result = x + y; break;
            case "-": result = x - y; break;
            case "*": result = x * y; break;
            case "/":
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
                case "==": return x == y;
                case "!=": return x != y;
                case "<": return x < y;
                case "<=": return x <= y;
                case ">": return x > y;
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
            case "==": return order == 0;
            case "!=": return order != 0;
            case "<": return order < 0;
            case "<=": return order <= 0;
            case ">": return order > 0;
            default: return order >= 0;
        }
    }
}
