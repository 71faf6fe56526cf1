package eddy.ops;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The values eddy's Java operators keep in their binary state (group keys, an event's
 * selected values): null, int, long, string, bool and double, each with a one-byte tag.
 */
final class StateValues {
    private StateValues() {
    }

    static void write(DataOutputStream out, Object value) throws IOException {
        if (value == null) {
            out.writeByte(0);
        } else if (value instanceof Integer) {
            out.writeByte(1);
            out.writeInt((Integer) value);
        } else if (value instanceof Long) {
            out.writeByte(2);
            out.writeLong((Long) value);
        } else if (value instanceof String) {
            byte[] text = ((String) value).getBytes(StandardCharsets.UTF_8);
            out.writeByte(3);
            out.writeInt(text.length);
            out.write(text);
        } else if (value instanceof Boolean) {
            out.writeByte(4);
            out.writeBoolean((Boolean) value);
        } else if (value instanceof Double) {
            out.writeByte(5);
            out.writeDouble((Double) value);
        } else {
            throw new IllegalArgumentException("a window value of type " + value.getClass());
        }
    }

    static Object read(DataInputStream in) throws IOException {
        switch (in.readByte()) {
            case 0: return null;
            case 1: return in.readInt();
            case 2: return in.readLong();
            case 3:
                byte[] text = new byte[in.readInt()];
                in.readFully(text);
                return new String(text, StandardCharsets.UTF_8);
            case 4: return in.readBoolean();
            case 5: return in.readDouble();
            default: throw new IOException("a corrupt window state");
        }
    }
}
