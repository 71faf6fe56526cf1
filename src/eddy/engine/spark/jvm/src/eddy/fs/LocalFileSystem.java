package eddy.fs;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's checksummed local file system ({@code file:}) whose permission changes are
 * system calls, not processes.
 *
 * <p>Without Hadoop's native library (pyspark ships none), {@code RawLocalFileSystem} sets a
 * file's permissions by running {@code chmod} in a new process. Spark's streaming checkpoint
 * does that for every file it writes: the offset log, the commit log and each state store's
 * changelog, each with its {@code .crc} — eight processes started by the JVM on every
 * micro-batch of a stateful query, a fixed cost a worker pays whether a batch holds one
 * event or a hundred thousand. This file system sets the same permissions through
 * {@code java.nio}; the checksums, the atomic renames and everything else are Hadoop's own.
 * A permission {@code java.nio} cannot express (sticky, setuid or setgid bits) still goes
 * to Hadoop's way.
 */
public final class LocalFileSystem extends org.apache.hadoop.fs.LocalFileSystem {

    public LocalFileSystem() {
        super(new Raw());
    }

    /** The raw (unchecksummed) layer: Hadoop's, with {@link #setPermission} in-process. */
    public static final class Raw extends RawLocalFileSystem {
        private static final PosixFilePermission[] BITS = {
            PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
            PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
            PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
            PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
            PosixFilePermission.OWNER_READ,
        };

        @Override
        public void setPermission(Path path, FsPermission permission) throws IOException {
            int mode = permission.toShort();
            if ((mode & ~0777) != 0) {
                super.setPermission(path, permission);
                return;
            }
            Set<PosixFilePermission> permissions = EnumSet.noneOf(PosixFilePermission.class);
            for (int bit = 0; bit < BITS.length; bit++) {
                if ((mode & (1 << bit)) != 0) {
                    permissions.add(BITS[bit]);
                }
            }
            try {
                Files.setPosixFilePermissions(pathToFile(path).toPath(), permissions);
            } catch (NoSuchFileException missing) {  // what Hadoop's callers expect
                throw new FileNotFoundException(missing.getMessage());
            } catch (UnsupportedOperationException notPosix) {
                super.setPermission(path, permission);
            }
        }
    }
}
